//! The URL parser's tests: every form, every error, and no password in any message.

use super::*;
use crate::policy::key::Secret;

fn tcp(host: &str, port: u16, tls: bool) -> Place {
    Place::Tcp {
        host: host.into(),
        port,
        tls,
    }
}

#[test]
fn the_three_forms_parse() {
    let u = parse("redis://retry:s%40cret@cache.example.com:6380/2").expect("ok");
    assert_eq!(u.place, tcp("cache.example.com", 6380, false));
    assert_eq!(u.user.as_deref(), Some("retry"));
    assert_eq!(u.password.as_ref().map(Secret::expose), Some("s@cret"));
    assert_eq!(u.db, 2);
    let u = parse("rediss://h").expect("ok");
    assert_eq!((u.place, u.db, u.user), (tcp("h", 6379, true), 0, None));
    let u = parse("redis://:pw@[::1]:7000").expect("ok");
    assert_eq!(u.place, tcp("::1", 7000, false));
    assert_eq!(u.user, None);
    let u = parse("redis+unix:///run/redis/redis.sock?db=3").expect("ok");
    assert_eq!(u.place, Place::Unix("/run/redis/redis.sock".into()));
    assert_eq!(u.db, 3);
}

#[test]
fn sentinel_and_cluster_urls_name_several_hosts() {
    let u = parse(
        "redis-sentinel://retry:pw@s1,s2:26380,[::1]/2?sentinelMasterId=mymaster&sentinelPassword=sp%40ss",
    )
    .expect("ok");
    let Place::Sentinel {
        sentinels,
        master,
        tls,
        sentinel,
    } = &u.place
    else {
        panic!("{u:?}");
    };
    assert_eq!(
        sentinels,
        &[
            ("s1".to_string(), 26379),
            ("s2".to_string(), 26380),
            ("::1".to_string(), 26379)
        ]
    );
    assert_eq!((master.as_str(), *tls, u.db), ("mymaster", false, 2));
    assert_eq!(sentinel.as_ref().map(|(_, p)| p.expose()), Some("sp@ss"));
    assert_eq!(u.password.as_ref().map(Secret::expose), Some("pw"));
    assert_eq!(
        u.redacted(),
        "redis-sentinel://retry:***@s1:26379,s2:26380,[::1]:26379/2?sentinelMasterId=mymaster&sentinelPassword=***"
    );
    let u = parse("rediss+cluster://retry:pw@n1:7000,n2").expect("ok");
    assert_eq!(
        u.place,
        Place::Cluster {
            nodes: vec![("n1".into(), 7000), ("n2".into(), 6379)],
            tls: true
        }
    );
    assert_eq!(u.redacted(), "rediss+cluster://retry:***@n1:7000,n2:6379");
    for (text, word) in [
        ("redis-sentinel://s1", "sentinelMasterId"),
        (
            "redis-sentinel://s1?sentinelMasterId=m&x=1",
            "'?x=' is not understood",
        ),
        ("redis+cluster://n1/3", "database 0 only"),
        ("redis+cluster://n1,,n2", "names no host"),
        ("redis+cluster://n1:99999", "not a port"),
    ] {
        let e = parse(text).expect_err(text);
        assert!(e.contains(word), "{text}: {e}");
    }
}

#[test]
fn bad_urls_say_what_is_wrong() {
    for (text, word) in [
        ("http://x", "'http://' is not a Redis URL scheme"),
        ("localhost:6379", "not a Redis URL"),
        ("redis://h:99999", "'99999' is not a port"),
        ("redis://h:0", "'0' is not a port"),
        ("redis://h:x", "'x' is not a port"),
        ("redis://h/x", "'x' is not a database"),
        ("redis://", "names no host"),
        ("redis://h?protocol=resp3", "query"),
        ("redis+unix://h/sock", "takes a path"),
        ("redis+unix://", "needs the socket's path"),
        ("redis://u:%zz@h", "hex digits"),
    ] {
        let e = parse(text).expect_err(text);
        assert!(e.contains(word), "{text}: {e}");
    }
}

#[test]
fn a_host_name_in_another_script_is_looked_up_in_its_ascii_form() {
    let u = parse("redis://bücher.example:7000/").expect("ok");
    assert_eq!(u.place, tcp("xn--bcher-kva.example", 7000, false));
    assert_eq!(u.label(), "redis://xn--bcher-kva.example:7000/0");
    // Mapped as UTS 46 says, as a browser maps it: capitals folded, the same name.
    let u = parse("rediss://BÜCHER.Example").expect("ok");
    assert_eq!(u.place, tcp("xn--bcher-kva.example", 6379, true));
    // Written percent-encoded, it is the same name; an ASCII name is kept as written.
    let u = parse("redis://b%C3%BCcher.example").expect("ok");
    assert_eq!(u.place, tcp("xn--bcher-kva.example", 6379, false));
    assert_eq!(
        parse("redis://Cache_1").expect("ok").place,
        tcp("Cache_1", 6379, false)
    );
    // Every host of a list.
    let u = parse("redis+cluster://bücher.example:7000,h:7001").expect("ok");
    let Place::Cluster { nodes, .. } = &u.place else {
        panic!("{u:?}");
    };
    assert_eq!(
        nodes,
        &[
            ("xn--bcher-kva.example".to_string(), 7000),
            ("h".to_string(), 7001)
        ]
    );
    for (text, word) in [
        (
            "redis://b%FFcher.example",
            "the host 'b%FFcher.example': a %-escape in it is not UTF-8",
        ),
        (
            "redis://b%C3%BC%25.example",
            "'bü%.example' is not a host name",
        ),
    ] {
        let e = parse(text).expect_err(text);
        assert!(e.contains(word), "{text}: {e}");
    }
}

#[test]
fn no_message_shows_the_password() {
    let u = parse("redis://retry:hunter2@h:1/0").expect("ok");
    assert_eq!(u.redacted(), "redis://retry:***@h:1/0");
    assert_eq!(u.label(), "redis://h:1/0");
    assert!(!format!("{u:?}").contains("hunter2"));
    let u = parse("redis+unix://:hunter2@/s").expect("ok");
    assert_eq!(u.redacted(), "redis+unix://:***@/s");
    assert_eq!(redact("redis://u:hunter2@h:99999"), "redis://u:***@h:99999");
    assert_eq!(redact("redis://u:a@b@h"), "redis://u:***@h");
    assert_eq!(redact("redis://h:1"), "redis://h:1");
    assert_eq!(redact("nonsense"), "nonsense");
    assert_eq!(redact("redis:/u:hunter2@h"), "***@h");
    assert_eq!(redact("redis://hun/ter2:x@h"), "redis://***@h");
}

#[test]
fn a_password_with_a_slash_is_written_escaped_and_never_quoted() {
    let u = parse("redis://cron:Pw0rd%2FKx+7=@h/1").expect("ok");
    assert_eq!(u.password.as_ref().map(Secret::expose), Some("Pw0rd/Kx+7="));
    assert_eq!((u.user.as_deref(), u.db), (Some("cron"), 1));
    let u = parse("redis+unix://cron:a%2Fb@/run/redis@main.sock?db=2").expect("ok");
    assert_eq!(u.place, Place::Unix("/run/redis@main.sock".into()));
    assert_eq!(u.password.as_ref().map(Secret::expose), Some("a/b"));
    assert_eq!((u.user.as_deref(), u.db), (Some("cron"), 2));
    for text in [
        "redis://cron:Pw0rd/Kx+7=@h/0",
        "redis://cron:Pw0rd?Kx@h:99999",
        "redis://cron:Pw0rd#Kx@h/x",
        "redis+unix://:Pw0rd/Kx@/run/redis.sock",
    ] {
        let e = parse(text).expect_err(text);
        assert!(e.contains("%2F") && !e.contains("Pw0"), "{text}: {e}");
    }
}
/// Every form of docs/redis.md's URL table, valid and malformed, with the master's and the sentinels'
/// passwords in every place a password can stand: no message and no shown URL holds any
/// three characters of either.
#[test]
fn no_part_of_any_password_is_in_any_message() {
    const MASTER: &str = "Zq9xW7kP";
    const SENTINEL: &str = "Yw5nTz3R";
    let forms = [
        "redis://u:Zq9xW7kP@h:6379/0",
        "redis://:Zq9xW7kP@h",
        "rediss://u:Zq9xW7kP@h:99999",
        "redis://u:Zq9xW7kP@h/x",
        "redis://u:Zq9/xW7kP@h/0",
        "redis://u:Zq9?xW7kP@h",
        "redis://u:Zq9#xW7kP@h",
        "redis://u:Zq9%zzxW7kP@h",
        "redis://u:Zq9xW7kP@",
        "redis://u:Zq9xW7kP@h?x=1",
        "redis:/u:Zq9xW7kP@h",
        "u:Zq9xW7kP@h",
        "redis+unix://u:Zq9xW7kP@/run/r.sock?db=x",
        "redis+unix://:Zq9xW7kP@h/sock",
        "redis+unix://:Zq9/xW7kP@/run/r.sock",
        "redis+unix:///run/r.sock?db=1&password=Yw5nTz3R",
        "redis+unix:///run/r.sock?password=Yw5nTz3R",
        "redis+unix:///run/r.sock?sentinelPassword=Yw5nTz3R&db=1",
        "redis://h/0?password=Yw5nTz3R",
        "redis://h?db=1&password=Yw5nTz3R",
        "redis-sentinel://:Zq9xW7kP@h1,h2/0?sentinelMasterId=m&sentinelPassword=Yw5nTz3R",
        "redis-sentinel://:pa/ss@h1,h2/0?sentinelMasterId=m&sentinelPassword=Yw5nTz3R",
        "redis-sentinel://u:Zq9xW7kP@h1,h2:99999/0?sentinelMasterId=m&sentinelPassword=Yw5nTz3R",
        "redis-sentinel://h1/0?sentinelPassword=Yw5nTz3R",
        "redis-sentinel://h1/0?sentinelMasterId=m&sentinelUser=s&sentinelPassword=Yw5n&Tz3R",
        "redis-sentinel://h1/0?sentinelPassword=Yw5n%zzTz3R&sentinelMasterId=m",
        "redis-sentinel://h1/0?sentinelMasterId=m&sentinelPassword=Yw5n@Tz3R",
        "redis-sentinel://h1/0?sentinelMasterId=m&sentinelPassword=Yw5nTz3R&x=1",
        "rediss-sentinel://u:Zq9xW7kP@h1,,h2/0?sentinelMasterId=m&sentinelPassword=Yw5nTz3R",
        "redis+cluster://u:Zq9xW7kP@n1,n2/3",
        "rediss+cluster://u:Zq9xW7kP@n1:0,n2",
        "redis+cluster://u:Zq9xW7kP@n1?password=Yw5nTz3R",
        "http://u:Zq9xW7kP@h",
    ];
    let leaks = |shown: &str| {
        [MASTER, SENTINEL].iter().any(|secret| {
            let chars: Vec<char> = secret.chars().collect();
            chars.windows(3).any(|w| {
                let part: String = w.iter().collect();
                shown.contains(&part)
            })
        })
    };
    for form in forms {
        let redacted = redact(form);
        assert!(!leaks(&redacted), "{form}: {redacted}");
        match parse(form) {
            Ok(url) => {
                assert!(!leaks(&url.redacted()), "{form}: {}", url.redacted());
                assert!(!leaks(&url.label()), "{form}: {}", url.label());
                assert!(!leaks(&format!("{url:?}")), "{form}: {url:?}");
            }
            Err(why) => assert!(!leaks(&why), "{form}: {why}"),
        }
    }
}
