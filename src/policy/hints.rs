//! What a hint file says about what should come next: an HTTP response header dump as
//! `curl -D FILE` writes it, or simple lines, `retry-after=30s` and `stop`.

use std::time::{Duration, SystemTime};

/// What an attempt's hint file said.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Hint {
    /// The status code of the last HTTP response in a header dump.
    pub http_status: Option<u16>,
    /// When to come back, from `Retry-After` or a `retry-after=` line.
    pub retry_after: Option<RetryAfter>,
    /// The command said not to retry (`stop`).
    pub stop: bool,
}

/// A `Retry-After` value (RFC 9110, 10.2.3): a delay, or a date to wait for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetryAfter {
    Delay(Duration),
    At(SystemTime),
}

impl RetryAfter {
    /// The wait it asks for, seen at `now`; a date in the past asks for none.
    pub fn wait(self, now: SystemTime) -> Duration {
        match self {
            RetryAfter::Delay(d) => d,
            RetryAfter::At(at) => at.duration_since(now).unwrap_or(Duration::ZERO),
        }
    }

    fn parse(value: &str) -> Option<RetryAfter> {
        let value = value.trim();
        if let Ok(secs) = value.parse::<u64>() {
            return Some(RetryAfter::Delay(Duration::from_secs(secs)));
        }
        // delay-seconds is any run of digits; one past u64 asks for longer than any wait, and
        // is capped at --retry-after-max as any long one is, not dropped.
        if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
            return Some(RetryAfter::Delay(Duration::from_secs(u64::MAX)));
        }
        if let Ok(at) = httpdate::parse_http_date(value) {
            return Some(RetryAfter::At(at));
        }
        // Longer than any flag takes is still a wait asked for: capped, not dropped.
        super::duration::parse_uncapped(value).map(RetryAfter::Delay)
    }
}

impl Hint {
    /// Reads a hint from text: a header dump if it holds an HTTP status line, else lines.
    pub fn parse(text: &str) -> Hint {
        let mut reading = Reading::default();
        for line in text.lines() {
            reading.line(line);
        }
        reading.finish()
    }
}

/// A hint read a line at a time, so that a file of any size is read in the memory of one
/// line: a header dump keeps only what its last response has said so far, for only the last
/// response counts. With redirects or `100 Continue`, curl writes every response.
#[derive(Debug, Default)]
pub struct Reading {
    /// What the simple lines say; unused once a status line is seen.
    simple: Hint,
    /// The last response of a header dump so far.
    response: Option<Response>,
}

/// A response of a header dump: its status line, and the headers after it up to the blank
/// line that ends them.
#[derive(Debug)]
struct Response {
    status: Option<u16>,
    /// The first `Retry-After` header, once seen (`None` inside when its value is not one).
    retry_after: Option<Option<RetryAfter>>,
    /// The blank line after the headers was seen: what follows is not theirs.
    ended: bool,
}

impl Reading {
    /// Takes the next line, without its `\n`.
    pub fn line(&mut self, line: &str) {
        let line = line.trim_end_matches('\r');
        if line.starts_with("HTTP/") {
            self.response = Some(Response {
                status: line.split_whitespace().nth(1).and_then(|c| c.parse().ok()),
                retry_after: None,
                ended: false,
            });
        } else if let Some(response) = &mut self.response {
            response.header(line);
        } else {
            self.simple_line(line.trim());
        }
    }

    /// What the lines said: the last response of a header dump, else the simple lines.
    pub fn finish(self) -> Hint {
        match self.response {
            Some(r) => Hint {
                http_status: r.status,
                retry_after: r.retry_after.flatten(),
                stop: false,
            },
            None => self.simple,
        }
    }

    fn simple_line(&mut self, line: &str) {
        if line.eq_ignore_ascii_case("stop") {
            self.simple.stop = true;
        } else if let Some((key, value)) = line.split_once('=')
            && key.trim().eq_ignore_ascii_case("retry-after")
        {
            self.simple.retry_after = RetryAfter::parse(value).or(self.simple.retry_after);
        }
    }
}

impl Response {
    fn header(&mut self, line: &str) {
        if self.ended {
            return;
        }
        if line.is_empty() {
            self.ended = true;
        } else if self.retry_after.is_none()
            && let Some((name, value)) = line.split_once(':')
            && name.trim().eq_ignore_ascii_case("retry-after")
        {
            self.retry_after = Some(RetryAfter::parse(value));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_response_of_a_redirect_chain_counts() {
        let dump = "HTTP/1.1 302 Found\r\nLocation: /b\r\nRetry-After: 9\r\n\r\n\
                    HTTP/1.1 503 Service Unavailable\r\nretry-after: 2\r\nContent-Length: 0\r\n\r\n";
        let hint = Hint::parse(dump);
        assert_eq!(hint.http_status, Some(503));
        assert_eq!(
            hint.retry_after,
            Some(RetryAfter::Delay(Duration::from_secs(2)))
        );
    }

    #[test]
    fn a_100_continue_before_the_response_is_passed_over() {
        let dump = "HTTP/1.1 100 Continue\r\n\r\nHTTP/2 404\r\ncontent-type: text/plain\r\n\r\n";
        assert_eq!(Hint::parse(dump).http_status, Some(404));
        assert_eq!(Hint::parse(dump).retry_after, None);
    }

    #[test]
    fn retry_after_takes_an_http_date() {
        let dump =
            "HTTP/1.1 429 Too Many Requests\r\nRetry-After: Wed, 21 Oct 2015 07:28:00 GMT\r\n\r\n";
        let Some(RetryAfter::At(at)) = Hint::parse(dump).retry_after else {
            panic!("a date");
        };
        assert_eq!(RetryAfter::At(at).wait(SystemTime::now()), Duration::ZERO);
        let before = at - Duration::from_secs(30);
        assert_eq!(RetryAfter::At(at).wait(before), Duration::from_secs(30));
    }

    #[test]
    fn a_retry_after_past_u64_asks_for_the_longest_wait_not_none() {
        let longest = Some(RetryAfter::Delay(Duration::from_secs(u64::MAX)));
        for value in [
            "18446744073709551615",
            "18446744073709551616",
            "99999999999999999999",
            &"9".repeat(5000),
        ] {
            let dump = format!("HTTP/1.1 503 Service Unavailable\r\nRetry-After: {value}\r\n\r\n");
            assert_eq!(Hint::parse(&dump).retry_after, longest, "{value}");
            let line = format!("retry-after={value}\n");
            assert_eq!(Hint::parse(&line).retry_after, longest, "{value}");
        }
        // Not digits alone: not a number of seconds, however long.
        let dump = "HTTP/1.1 503 x\r\nRetry-After: 99999999999999999999x\r\n\r\n";
        assert_eq!(Hint::parse(dump).retry_after, None);
    }

    #[test]
    fn a_retry_after_hint_longer_than_any_flag_takes_is_kept_to_be_capped() {
        let hint = |value: &str| Hint::parse(&format!("retry-after={value}\n")).retry_after;
        let delay = |secs| Some(RetryAfter::Delay(Duration::from_secs(secs)));
        assert_eq!(hint("2y"), delay(2 * 31_557_600));
        assert_eq!(hint("100000h"), delay(360_000_000));
        // Past what a Duration holds: the longest wait, as for digits past u64.
        let longest = Some(RetryAfter::Delay(Duration::MAX));
        assert_eq!(hint("18446744073709551616s"), longest);
        assert_eq!(hint("1e30"), longest);
        assert_eq!(hint("soon"), None);
        assert_eq!(hint("-5s"), None);
    }

    #[test]
    fn only_the_last_of_many_responses_is_kept_and_its_headers_end_at_the_blank_line() {
        let mut reading = Reading::default();
        for _ in 0..10_000 {
            for line in ["HTTP/1.1 503 Service Unavailable", "Retry-After: 7", ""] {
                reading.line(line);
            }
        }
        let last = [
            "HTTP/1.1 404 Not Found\r",
            "Content-Type: text/plain\r",
            "\r",
            "Retry-After: 3\r",
            "stop",
        ];
        for line in last {
            reading.line(line);
        }
        assert_eq!(
            reading.finish(),
            Hint {
                http_status: Some(404),
                retry_after: None,
                stop: false,
            }
        );
    }

    #[test]
    fn simple_lines_say_stop_or_when_to_come_back() {
        let hint = Hint::parse("retry-after=1m 30s\n");
        assert_eq!(
            hint.retry_after,
            Some(RetryAfter::Delay(Duration::from_secs(90)))
        );
        assert!(!hint.stop);
        assert!(Hint::parse("something\nstop\n").stop);
        assert_eq!(Hint::parse("retry-after=soon"), Hint::default());
    }
}
