//! The built-in presets' data: every status of each, sorted, with its name and why.
//!
//! The `curl` preset sorts every exit status that curl's own manual documents, from 1 to 100,
//! into transient (worth another attempt) and fatal (the same command will fail the same way).
//! Sources, both in the curl/curl repository:
//!
//! - the EXIT CODES section of the curl man page, `docs/cmdline-opts/_EXITCODES.md`, for which
//!   statuses the tool documents and what each means;
//! - `docs/libcurl/libcurl-errors.md` (the libcurl-errors(3) man page), for the `CURLE_*` name
//!   of each status, since the tool exits with libcurl's `CURLcode` as its status.
//!
//! curl's own `--retry` (`src/tool_operate.c`, and `docs/cmdline-opts/retry.md`) always retries
//! 5, 6, 12 and 28, retries 7 with `--retry-connrefused`, and retries 22 only for the HTTP
//! statuses 408, 429, 500, 502, 503 and 504; this preset is broader, as a retry wrapper sees
//! only the exit status. Statuses the man page does not list (20, 24, 29, 32, 40, 44, 46, 50,
//! 51, 57, 62, 75, 76, 81: obsolete or library-only) are in neither list; since the preset's
//! transient list works as `--retry-on`, they are not retried.

use super::{Code, Preset, Seen};

/// A transient status of a preset.
const fn transient(status: i32, name: &'static str, why: &'static str) -> Code {
    Code {
        status,
        name,
        transient: true,
        why,
    }
}

/// Output a tool was seen to print, and whether the preset retries it.
const fn seen(transient: bool, when: &'static str, output: &'static str) -> Seen {
    Seen {
        transient,
        when,
        output,
    }
}

/// A fatal status of a preset.
const fn fatal(status: i32, name: &'static str, why: &'static str) -> Code {
    Code {
        status,
        name,
        transient: false,
        why,
    }
}

/// curl's exit statuses, from the EXIT CODES section of its man page.
pub const CURL: Preset = Preset {
    name: "curl",
    source: "curl man page, EXIT CODES (curl/curl docs/cmdline-opts/_EXITCODES.md); \
             names from libcurl-errors(3) (curl/curl docs/libcurl/libcurl-errors.md)",
    codes: &[
        fatal(
            1,
            "CURLE_UNSUPPORTED_PROTOCOL",
            "unsupported protocol: this curl build cannot speak the URL's scheme",
        ),
        fatal(
            2,
            "CURLE_FAILED_INIT",
            "failed to initialize; the curl tool also exits 2 for an unknown or bad option",
        ),
        fatal(
            3,
            "CURLE_URL_MALFORMAT",
            "URL malformed: the syntax was not correct",
        ),
        fatal(
            4,
            "CURLE_NOT_BUILT_IN",
            "a needed feature or option was disabled when curl was built",
        ),
        transient(
            5,
            "CURLE_COULDNT_RESOLVE_PROXY",
            "could not resolve the proxy host; DNS may recover (curl --retry retries it)",
        ),
        transient(
            6,
            "CURLE_COULDNT_RESOLVE_HOST",
            "could not resolve the host; DNS may recover (curl --retry retries it)",
        ),
        transient(
            7,
            "CURLE_COULDNT_CONNECT",
            "failed to connect to the host or proxy; it may be starting or unreachable for now",
        ),
        transient(
            8,
            "CURLE_WEIRD_SERVER_REPLY",
            "the server sent data curl could not parse, as an overloaded server's greeting",
        ),
        fatal(
            9,
            "CURLE_REMOTE_ACCESS_DENIED",
            "the server denied access to the resource or directory",
        ),
        transient(
            10,
            "CURLE_FTP_ACCEPT_FAILED",
            "FTP accept failed: the server reported an error while connecting back",
        ),
        fatal(
            11,
            "CURLE_FTP_WEIRD_PASS_REPLY",
            "FTP weird PASS reply: the login did not get a usable answer",
        ),
        transient(
            12,
            "CURLE_FTP_ACCEPT_TIMEOUT",
            "FTP accept timeout: the server did not connect back in time (curl --retry retries it)",
        ),
        fatal(
            13,
            "CURLE_FTP_WEIRD_PASV_REPLY",
            "FTP weird PASV reply: the server's answer to PASV/EPSV cannot be parsed",
        ),
        fatal(
            14,
            "CURLE_FTP_WEIRD_227_FORMAT",
            "FTP weird 227 format: the server's 227 line cannot be parsed",
        ),
        transient(
            15,
            "CURLE_FTP_CANT_GET_HOST",
            "FTP cannot use host: could not resolve the host from the 227 line",
        ),
        transient(
            16,
            "CURLE_HTTP2",
            "HTTP/2 framing layer error, often a connection problem",
        ),
        fatal(
            17,
            "CURLE_FTP_COULDNT_SET_TYPE",
            "FTP could not set binary: the server refused the transfer mode",
        ),
        transient(
            18,
            "CURLE_PARTIAL_FILE",
            "partial file: the transfer ended early",
        ),
        transient(
            19,
            "CURLE_FTP_COULDNT_RETR_FILE",
            "FTP RETR (or similar) failed; a missing file is 78, so this is mostly a busy server",
        ),
        fatal(
            21,
            "CURLE_QUOTE_ERROR",
            "FTP quote error: a custom quote command returned an error",
        ),
        transient(
            22,
            "CURLE_HTTP_RETURNED_ERROR",
            "HTTP status 400 or above with --fail; the HTTP status itself decides elsewhere",
        ),
        fatal(
            23,
            "CURLE_WRITE_ERROR",
            "write error: curl could not write data locally",
        ),
        fatal(
            25,
            "CURLE_UPLOAD_FAILED",
            "failed starting the upload; for FTP the server denied STOR",
        ),
        fatal(
            26,
            "CURLE_READ_ERROR",
            "read error: curl could not read local data",
        ),
        fatal(
            27,
            "CURLE_OUT_OF_MEMORY",
            "out of memory: a memory allocation failed",
        ),
        transient(
            28,
            "CURLE_OPERATION_TIMEDOUT",
            "operation timeout (curl --retry retries it)",
        ),
        fatal(
            30,
            "CURLE_FTP_PORT_FAILED",
            "FTP PORT failed: the server does not take PORT; use passive mode",
        ),
        fatal(
            31,
            "CURLE_FTP_COULDNT_USE_REST",
            "FTP could not use REST: the server cannot resume",
        ),
        fatal(
            33,
            "CURLE_RANGE_ERROR",
            "HTTP range error: the server does not support or accept ranges",
        ),
        fatal(
            34,
            "CURLE_HTTP_POST_ERROR",
            "HTTP post error: internal error building the request (now CURLE_OBSOLETE34)",
        ),
        transient(
            35,
            "CURLE_SSL_CONNECT_ERROR",
            "SSL connect error: the TLS handshake failed, often a reset connection",
        ),
        fatal(
            36,
            "CURLE_BAD_DOWNLOAD_RESUME",
            "bad download resume: the resume offset is outside the file",
        ),
        fatal(
            37,
            "CURLE_FILE_COULDNT_READ_FILE",
            "FILE could not read file: missing file or permissions",
        ),
        fatal(
            38,
            "CURLE_LDAP_CANNOT_BIND",
            "LDAP cannot bind: the bind (authentication) was refused",
        ),
        fatal(39, "CURLE_LDAP_SEARCH_FAILED", "LDAP search failed"),
        fatal(
            41,
            "CURLE_FUNCTION_NOT_FOUND",
            "a required LDAP function was not found (now CURLE_OBSOLETE41)",
        ),
        fatal(
            42,
            "CURLE_ABORTED_BY_CALLBACK",
            "aborted by callback: the application told curl to stop",
        ),
        fatal(
            43,
            "CURLE_BAD_FUNCTION_ARGUMENT",
            "internal error: a function was called with a bad parameter",
        ),
        transient(
            45,
            "CURLE_INTERFACE_FAILED",
            "the outgoing interface could not be used, as one that is down or has no address yet",
        ),
        fatal(
            47,
            "CURLE_TOO_MANY_REDIRECTS",
            "too many redirects: the redirect limit was hit",
        ),
        fatal(
            48,
            "CURLE_UNKNOWN_OPTION",
            "an option passed on to libcurl was unknown and rejected",
        ),
        fatal(
            49,
            "CURLE_SETOPT_OPTION_SYNTAX",
            "malformed option (formerly the malformed telnet option)",
        ),
        transient(
            52,
            "CURLE_GOT_NOTHING",
            "the server replied nothing: an empty reply",
        ),
        fatal(
            53,
            "CURLE_SSL_ENGINE_NOTFOUND",
            "SSL crypto engine not found",
        ),
        fatal(
            54,
            "CURLE_SSL_ENGINE_SETFAILED",
            "cannot set the SSL crypto engine as default",
        ),
        transient(55, "CURLE_SEND_ERROR", "failed sending network data"),
        transient(56, "CURLE_RECV_ERROR", "failure in receiving network data"),
        fatal(
            58,
            "CURLE_SSL_CERTPROBLEM",
            "problem with the local client certificate",
        ),
        fatal(
            59,
            "CURLE_SSL_CIPHER",
            "could not use the specified SSL cipher",
        ),
        fatal(
            60,
            "CURLE_PEER_FAILED_VERIFICATION",
            "the peer certificate cannot be authenticated with known CA certificates",
        ),
        fatal(
            61,
            "CURLE_BAD_CONTENT_ENCODING",
            "unrecognized transfer encoding",
        ),
        fatal(63, "CURLE_FILESIZE_EXCEEDED", "maximum file size exceeded"),
        fatal(
            64,
            "CURLE_USE_SSL_FAILED",
            "the requested FTP SSL level failed",
        ),
        fatal(
            65,
            "CURLE_SEND_FAIL_REWIND",
            "sending the data again needs a rewind that failed, as for piped input",
        ),
        fatal(
            66,
            "CURLE_SSL_ENGINE_INITFAILED",
            "failed to initialize the SSL engine",
        ),
        fatal(
            67,
            "CURLE_LOGIN_DENIED",
            "the user name, password or similar was not accepted",
        ),
        fatal(
            68,
            "CURLE_TFTP_NOTFOUND",
            "file not found on the TFTP server",
        ),
        fatal(
            69,
            "CURLE_TFTP_PERM",
            "permission problem on the TFTP server",
        ),
        fatal(
            70,
            "CURLE_REMOTE_DISK_FULL",
            "out of disk space on the server",
        ),
        fatal(71, "CURLE_TFTP_ILLEGAL", "illegal TFTP operation"),
        transient(
            72,
            "CURLE_TFTP_UNKNOWNID",
            "unknown TFTP transfer ID: the server lost track of this transfer",
        ),
        fatal(
            73,
            "CURLE_REMOTE_FILE_EXISTS",
            "the file already exists and is not overwritten",
        ),
        fatal(74, "CURLE_TFTP_NOSUCHUSER", "no such user (TFTP)"),
        fatal(
            77,
            "CURLE_SSL_CACERT_BADFILE",
            "problem reading the SSL CA certificate (path? access rights?)",
        ),
        fatal(
            78,
            "CURLE_REMOTE_FILE_NOT_FOUND",
            "the resource referenced in the URL does not exist",
        ),
        transient(
            79,
            "CURLE_SSH",
            "unspecified error in the SSH session; bad logins and host keys have their own codes",
        ),
        transient(
            80,
            "CURLE_SSL_SHUTDOWN_FAILED",
            "failed to shut down the SSL connection",
        ),
        fatal(
            82,
            "CURLE_SSL_CRL_BADFILE",
            "could not load the CRL file, missing or in the wrong format",
        ),
        fatal(83, "CURLE_SSL_ISSUER_ERROR", "issuer check failed"),
        fatal(
            84,
            "CURLE_FTP_PRET_FAILED",
            "the server does not understand FTP PRET",
        ),
        fatal(85, "CURLE_RTSP_CSEQ_ERROR", "mismatch of RTSP CSeq numbers"),
        fatal(
            86,
            "CURLE_RTSP_SESSION_ERROR",
            "mismatch of RTSP session identifiers",
        ),
        fatal(
            87,
            "CURLE_FTP_BAD_FILE_LIST",
            "unable to parse the FTP file list",
        ),
        fatal(
            88,
            "CURLE_CHUNK_FAILED",
            "the FTP chunk callback reported an error",
        ),
        transient(
            89,
            "CURLE_NO_CONNECTION_AVAILABLE",
            "no connection available, the session is queued",
        ),
        fatal(
            90,
            "CURLE_SSL_PINNEDPUBKEYNOTMATCH",
            "the SSL public key does not match the pinned public key",
        ),
        fatal(
            91,
            "CURLE_SSL_INVALIDCERTSTATUS",
            "invalid SSL certificate status (--cert-status)",
        ),
        transient(
            92,
            "CURLE_HTTP2_STREAM",
            "stream error in the HTTP/2 framing layer",
        ),
        fatal(
            93,
            "CURLE_RECURSIVE_API_CALL",
            "an API function was called from inside a callback",
        ),
        fatal(
            94,
            "CURLE_AUTH_ERROR",
            "an authentication function returned an error",
        ),
        transient(
            95,
            "CURLE_HTTP3",
            "a problem in the HTTP/3 layer, often a connection problem",
        ),
        transient(96, "CURLE_QUIC_CONNECT_ERROR", "QUIC connection error"),
        transient(
            97,
            "CURLE_PROXY",
            "proxy handshake error, mostly the proxy failing to reach the host",
        ),
        fatal(
            98,
            "CURLE_SSL_CLIENTCERT",
            "a client certificate is required to complete the TLS handshake",
        ),
        fatal(
            99,
            "CURLE_UNRECOVERABLE_POLL",
            "poll or select returned a fatal error",
        ),
        fatal(
            100,
            "CURLE_TOO_LARGE",
            "a value or data field grew larger than allowed",
        ),
    ],
    retry_if_output: &[],
    fatal_if_output: &[],
    seen: &[],
};

/// Every built-in preset.
/// sysexits.h (BSD, and the mail transfer agents that follow it): only EX_TEMPFAIL asks for
/// another try.
pub const SYSEXITS: Preset = Preset {
    name: "sysexits",
    source: "sysexits.h (4.4BSD; glibc's /usr/include/sysexits.h): EX_TEMPFAIL is \"temporary \
             failure, indicating something that is not really an error\", the user is invited \
             to retry",
    codes: &[
        fatal(64, "EX_USAGE", "the command was used incorrectly"),
        fatal(65, "EX_DATAERR", "the input data was incorrect"),
        fatal(
            66,
            "EX_NOINPUT",
            "an input file did not exist or was not readable",
        ),
        fatal(67, "EX_NOUSER", "the user specified did not exist"),
        fatal(68, "EX_NOHOST", "the host specified did not exist"),
        fatal(69, "EX_UNAVAILABLE", "a service is unavailable"),
        fatal(70, "EX_SOFTWARE", "an internal software error"),
        fatal(71, "EX_OSERR", "an operating system error"),
        fatal(72, "EX_OSFILE", "a system file is missing or wrong"),
        fatal(73, "EX_CANTCREAT", "an output file cannot be created"),
        fatal(74, "EX_IOERR", "an error doing I/O on a file"),
        transient(75, "EX_TEMPFAIL", "a temporary failure: try again later"),
        fatal(
            76,
            "EX_PROTOCOL",
            "the remote system returned something impossible",
        ),
        fatal(77, "EX_NOPERM", "insufficient permission"),
        fatal(
            78,
            "EX_CONFIG",
            "something is unconfigured or misconfigured",
        ),
    ],
    retry_if_output: &[],
    fatal_if_output: &[],
    seen: &[],
};

/// ssh(1): "exits with the exit status of the remote command or with 255 if an error
/// occurred". Its own errors are retried, but not those that a retry cannot mend.
pub const SSH: Preset = Preset {
    name: "ssh",
    source: "ssh(1), EXIT STATUS: 255 for ssh's own errors; the remote command's status \
             otherwise",
    codes: &[transient(
        255,
        "ssh error",
        "connection refused, timed out, reset or unreachable",
    )],
    retry_if_output: &[],
    fatal_if_output: &[
        r"Permission denied \(",
        r"Host key verification failed",
        r"REMOTE HOST IDENTIFICATION HAS CHANGED",
        r"Too many authentication failures",
        r"Bad configuration option",
    ],
    seen: &[],
};

/// git: network failures and lock contention are retried; every other failure (git exits 128
/// from die(), 1 for most others) is not. Each transport's own words decide, matched without
/// regard to case where git's wording has changed between releases (today's git prints "the
/// remote end hung up unexpectedly"; older ones "The remote end ..."). Over ssh and git://,
/// "Could not read from remote repository" follows a dropped connection and a missing
/// repository alike, so it is no rule: ssh's own line before it (`kex_exchange_identification`,
/// `Connection closed`, `Connection reset`, `timed out`) is.
pub const GIT: Preset = Preset {
    name: "git",
    source: "git's messages for network errors (remote-curl.c, transport, connect.c), \
             ssh's and curl's beneath it, and lock contention (lockfile.c: \"Unable to create \
             '...lock': File exists\")",
    codes: &[],
    retry_if_output: &[
        r"(?i)could not resolve host",
        r"(?i)failed to connect to",
        r"(?i)couldn't connect to server",
        r"(?i)connection (timed out|refused|reset|closed)",
        r"(?i)operation timed out",
        r"(?i)kex_exchange_identification",
        r"(?i)send disconnect: broken pipe",
        r"(?i)the remote end hung up unexpectedly",
        r"(?i)early EOF",
        r"(?i)RPC failed",
        r"(?i)empty reply from server",
        r"(?i)transfer closed with \d+ bytes remaining",
        r"(?i)unexpected disconnect while reading sideband packet",
        r"(gnutls_handshake|SSL_connect|SSL_read)\(\) failed|SSL_ERROR_SYSCALL",
        r"The requested URL returned error: (408|429|5\d\d)",
        r"Unable to create '.*\.lock': File exists",
        r"cannot lock ref",
    ],
    fatal_if_output: &[
        r"(?i)authentication failed",
        r"Permission denied",
        r"(?i)repository .*not found",
        r"(?i)could not be found or you don't have permission",
        r"access denied or repository not exported",
        r"not a git repository",
        r"does not appear to be a git repository",
        r"couldn't find remote ref",
        r"Host key verification failed",
        // A ref in the way of another's name (`foo` of `foo/bar`): `cannot lock ref` says it
        // too, but no wait clears it; `git remote prune` does.
        r"' exists; cannot create '",
    ],
    seen: &[
        seen(
            true,
            "git 2.47 over https, a server that answered 503",
            "fatal: unable to access 'https://h/r.git/': The requested URL returned error: 503",
        ),
        seen(
            true,
            "git 2.47 over https, a server that closed the connection",
            "fatal: unable to access 'https://h/r.git/': Empty reply from server",
        ),
        seen(
            true,
            "git 2.47 over https, a transfer cut short",
            "fatal: unable to access 'https://h/r.git/': transfer closed with 970 bytes \
             remaining to read",
        ),
        seen(
            true,
            "git 2.47 over https, nothing listening",
            "fatal: unable to access 'http://h:1/r.git/': Failed to connect to h port 1 after 0 \
             ms: Couldn't connect to server",
        ),
        seen(
            true,
            "git 2.47 over https, a host name that did not resolve",
            "fatal: unable to access 'https://h/r/': Could not resolve host: h",
        ),
        seen(
            true,
            "git 2.47 and OpenSSH 9.2, a server that closed the connection at once",
            "kex_exchange_identification: Connection closed by remote host\n\
             Connection closed by 192.0.2.1 port 22\n\
             fatal: Could not read from remote repository.\n\n\
             Please make sure you have the correct access rights\n\
             and the repository exists.",
        ),
        seen(
            true,
            "git 2.47 and OpenSSH 9.2, a connection reset",
            "kex_exchange_identification: read: Connection reset by peer\n\
             Connection reset by 192.0.2.1 port 22\n\
             fatal: Could not read from remote repository.",
        ),
        seen(
            true,
            "git 2.47 and OpenSSH 9.2, nothing listening",
            "ssh: connect to host h port 22: Connection refused\n\
             fatal: Could not read from remote repository.",
        ),
        seen(
            true,
            "git 2.47 over git://, nothing listening",
            "fatal: unable to connect to h:\nh[0: 192.0.2.1]: errno=Connection refused",
        ),
        seen(
            true,
            "git 2.47, a fetch whose connection dropped mid-transfer",
            "fetch-pack: unexpected disconnect while reading sideband packet\n\
             fatal: early EOF\nfatal: fetch-pack: invalid index-pack output",
        ),
        seen(
            true,
            "git 2.47, a connection dropped after the refs",
            "fatal: the remote end hung up unexpectedly",
        ),
        seen(
            true,
            "git, another git holding the index",
            "fatal: Unable to create '/r/.git/index.lock': File exists.",
        ),
        seen(
            false,
            "git 2.47, a fetch whose new branch foo/bar meets an old foo",
            "error: cannot lock ref 'refs/remotes/origin/foo/bar': 'refs/remotes/origin/foo' \
             exists; cannot create 'refs/remotes/origin/foo/bar'\nFrom /tmp/gref/up\n ! [new \
             branch]      foo/bar    -> origin/foo/bar  (unable to update local ref)\nerror: \
             some local refs could not be updated; try running\n 'git remote prune origin' to \
             remove any old, conflicting branches",
        ),
        seen(
            false,
            "git 2.47 over https, no such repository",
            "fatal: repository 'https://h/nope.git/' not found",
        ),
        seen(
            false,
            "GitHub over https or ssh, no such repository",
            "remote: Repository not found.\nfatal: repository 'https://github.com/o/nope.git/' \
             not found",
        ),
        seen(
            false,
            "git 2.47 over https, a server that answered 403",
            "fatal: unable to access 'https://h/r.git/': The requested URL returned error: 403",
        ),
        seen(
            false,
            "git 2.47 over ssh, no such repository",
            "fatal: '/nope.git' does not appear to be a git repository\n\
             fatal: Could not read from remote repository.",
        ),
        seen(
            false,
            "GitLab over ssh, no such project or no access",
            "ERROR: The project you were looking for could not be found or you don't have \
             permission to view it.\n\nfatal: Could not read from remote repository.",
        ),
        seen(
            false,
            "OpenSSH 9.2, a key the server refused",
            "git@h: Permission denied (publickey).\nfatal: Could not read from remote \
             repository.",
        ),
        seen(
            false,
            "git 2.47 over git://, no such repository",
            "fatal: remote error: access denied or repository not exported: /nope.git",
        ),
        seen(
            false,
            "git 2.47 over git://, a server that closed the connection without a word: git \
             says only what it says for a missing repository over ssh",
            "fatal: Could not read from remote repository.",
        ),
        seen(
            false,
            "git, a merge conflict",
            "CONFLICT (content): Merge conflict in a",
        ),
    ],
};

/// apt and dpkg: another package manager holding the lock, or a mirror that does not answer,
/// answers 408, 429 or 5xx, or is caught mid-sync, is retried; other failures (apt exits 100
/// for all of them: a package that is not there, a 404 from an index out of date) are not.
pub const APT: Preset = Preset {
    name: "apt",
    source: "apt-pkg's lock messages (\"Could not get lock\", \"Unable to acquire the dpkg \
             frontend lock\") and acquire errors (\"Temporary failure resolving\", \"Could not \
             connect to\", \"Connection failed\", an HTTP status, \"Mirror sync in progress?\"), \
             as apt 2.6 prints them",
    codes: &[],
    retry_if_output: &[
        r"Could not get lock",
        r"Unable to acquire the dpkg frontend lock",
        r"Unable to lock the (administration|download) directory",
        r"is another process using it\?",
        r"Temporary failure resolving",
        r"Could not connect to",
        r"Connection timed out",
        r"Connection failed \[IP: ",
        // The mirror's HTTP status, as apt writes it: `  503  Service Unavailable [IP: …]`.
        r"\s(408|429|500|502|503|504)\s+[A-Z][A-Za-z ]*\[IP: ",
        r"Mirror sync in progress\?",
        r"Hash Sum mismatch",
    ],
    fatal_if_output: &[],
    seen: &[
        seen(
            true,
            "apt 2.6, another process holding the dpkg frontend lock (its admin directory in \
             /tmp/aptlab)",
            "E: Could not get lock /tmp/aptlab/dpkg/lock-frontend. It is held by process 10466 \
             (python3)\nE: Unable to acquire the dpkg frontend lock \
             (/tmp/aptlab/dpkg/lock-frontend), is another process using it?",
        ),
        seen(
            true,
            "apt 2.6, another process holding the lists' lock (apt-get update, lists in \
             /tmp/aptlab)",
            "E: Could not get lock /tmp/aptlab/state/lists/lock. It is held by process 31750 \
             (python3)\nE: Unable to lock directory /tmp/aptlab/state/lists/",
        ),
        seen(
            true,
            "apt 2.6, a mirror that answered 503",
            "Err:1 http://127.0.0.1:18801 ./ retrylab 1.0\n  503  Service Unavailable [IP: \
             127.0.0.1 18801]\nE: Failed to fetch \
             http://127.0.0.1:18801/pkgs/retrylab_1.0_all.deb  503  Service Unavailable [IP: \
             127.0.0.1 18801]",
        ),
        seen(
            true,
            "apt 2.6, a proxy that answered 502",
            "Err:1 http://127.0.0.1:18801 ./ retrylab 1.0\n  502  Bad Gateway [IP: 127.0.0.1 \
             18801]\nE: Failed to fetch http://127.0.0.1:18801/pkgs/retrylab_1.0_all.deb  502  \
             Bad Gateway [IP: 127.0.0.1 18801]",
        ),
        seen(
            true,
            "apt 2.6, a mirror caught mid-sync (a file of another size than its index says)",
            "Get:1 http://127.0.0.1:18801 ./ retrylab 1.0 [648 B]\nErr:1 \
             http://127.0.0.1:18801 ./ retrylab 1.0\n  File has unexpected size (999 != 648). \
             Mirror sync in progress? [IP: 127.0.0.1 18801]\nE: Failed to fetch \
             http://127.0.0.1:18801/pkgs/retrylab_1.0_all.deb  File has unexpected size (999 != \
             648). Mirror sync in progress? [IP: 127.0.0.1 18801]",
        ),
        seen(
            true,
            "apt 2.6, a mirror that closed the connection without an answer",
            "Err:1 http://127.0.0.1:18801 ./ retrylab 1.0\n  Connection failed [IP: 127.0.0.1 \
             18801]\nE: Failed to fetch http://127.0.0.1:18801/pkgs/retrylab_1.0_all.deb  \
             Connection failed [IP: 127.0.0.1 18801]",
        ),
        seen(
            true,
            "apt 2.6, a mirror that refused the connection",
            "Err:1 http://127.0.0.1:18801 ./ retrylab 1.0\n  Could not connect to \
             127.0.0.1:18801 (127.0.0.1). - connect (111: Connection refused)\nE: Failed to \
             fetch http://127.0.0.1:18801/pkgs/retrylab_1.0_all.deb  Could not connect to \
             127.0.0.1:18801 (127.0.0.1). - connect (111: Connection refused)",
        ),
        seen(
            false,
            "apt 2.6, a package the index names and the mirror does not have (an index out of \
             date: apt-get update first)",
            "Err:1 http://127.0.0.1:18801 ./ retrylab 1.0\n  404  Not Found [IP: 127.0.0.1 \
             18801]\nE: Failed to fetch http://127.0.0.1:18801/pkgs/retrylab_1.0_all.deb  404  \
             Not Found [IP: 127.0.0.1 18801]",
        ),
        seen(
            false,
            "apt 2.6, no such package",
            "E: Unable to locate package retrylab-nonexistent",
        ),
    ],
};
