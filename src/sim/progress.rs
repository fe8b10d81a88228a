//! The progress line of `retry --explain --fleet`: how many of the runs of the job to simulate
//! have started, on one line of stderr that is cleared before the table is printed. Only on a
//! terminal, and only once the simulation has taken longer than a second: a quick answer
//! shows nothing but the answer.
//!
//! One line of text, redrawn in place at most ten times a second, needs a carriage return and
//! an erase-line code; a progress-bar library would add its crates, a math library to load at
//! every start of retry (for its rate estimates) and 0.3 MiB of resident memory, for a line
//! that has no bar, rate or estimate.

use std::io::{self, Write};
use std::time::{Duration, Instant};

/// How long a simulation runs before its progress is shown.
pub const DUE: Duration = Duration::from_secs(1);

/// The least time between two drawings of the line.
const EVERY: Duration = Duration::from_millis(100);

/// Back to the start of the line and erase it (ECMA-48 EL 2).
const CLEAR: &str = "\r\x1b[2K";

/// The line, hidden until it is due.
pub struct Progress {
    total: u64,
    /// Where the line is drawn: a terminal, or nowhere.
    target: Option<Box<dyn Write>>,
    start: Instant,
    due: Instant,
    /// When the line was last drawn; `None` until it first is.
    drawn: Option<Instant>,
}

impl Progress {
    /// A line for `total` runs of the job, drawn on `target` once `after` has passed.
    pub fn new(total: u64, target: Option<Box<dyn Write>>, after: Duration) -> Progress {
        let start = Instant::now();
        Progress {
            total,
            target,
            start,
            due: start + after,
            drawn: None,
        }
    }

    /// The line on stderr when it is a terminal and `shown` (not `-q`), after [`DUE`] (or
    /// the tests' own time, in a debug build).
    pub fn on_stderr(total: u64, shown: bool) -> Progress {
        use std::io::IsTerminal;
        let terminal = shown && io::stderr().is_terminal();
        let target = terminal.then(|| Box::new(io::stderr()) as Box<dyn Write>);
        let after = crate::platform::clock::test_progress_due().unwrap_or(DUE);
        Progress::new(total, target, after)
    }

    /// `done` runs have started.
    pub fn tick(&mut self, done: u64) {
        let Some(target) = self.target.as_mut() else {
            return;
        };
        let now = Instant::now();
        if now < self.due || self.drawn.is_some_and(|at| now.duration_since(at) < EVERY) {
            return;
        }
        let line = line(done, self.total, now.duration_since(self.start));
        // A terminal that cannot be written to loses a progress line, nothing else.
        if write!(target, "{CLEAR}{line}")
            .and_then(|()| target.flush())
            .is_err()
        {
            self.target = None;
            return;
        }
        self.drawn = Some(now);
    }

    /// The simulation is over: the line is cleared, and the cursor is where it was.
    pub fn finish(mut self) {
        if let (Some(target), Some(_)) = (self.target.as_mut(), self.drawn) {
            let _ = write!(target, "{CLEAR}").and_then(|()| target.flush());
        }
    }
}

/// The words of the line.
fn line(done: u64, total: u64, elapsed: Duration) -> String {
    let percent = if total == 0 {
        100
    } else {
        u128::from(done.min(total)) * 100 / u128::from(total)
    };
    format!(
        "retry: simulating the fleet: {} of {} runs of the job ({percent}%), {} so far",
        grouped(done),
        grouped(total),
        humantime::format_duration(Duration::from_secs(elapsed.as_secs()))
    )
}

/// `n` with its digits in groups of three: 1,234,567.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    /// A terminal that keeps what is written to it.
    #[derive(Clone, Default)]
    struct Screen(Arc<Mutex<Vec<u8>>>);

    impl Screen {
        fn text(&self) -> String {
            String::from_utf8_lossy(&self.0.lock().expect("the screen")).into_owned()
        }
    }

    impl Write for Screen {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().expect("the screen").extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn on(screen: &Screen) -> Option<Box<dyn Write>> {
        Some(Box::new(screen.clone()))
    }

    #[test]
    fn a_simulation_past_its_due_time_shows_its_runs_and_clears_the_line() {
        let screen = Screen::default();
        let mut progress = Progress::new(400_000, on(&screen), Duration::ZERO);
        progress.tick(100_000);
        let shown = screen.text();
        assert_eq!(
            shown,
            "\r\x1b[2Kretry: simulating the fleet: 100,000 of 400,000 runs of the job (25%), \
             0s so far"
        );
        progress.finish();
        assert_eq!(&screen.text()[shown.len()..], "\r\x1b[2K");
    }

    #[test]
    fn the_line_is_drawn_at_most_ten_times_a_second() {
        let screen = Screen::default();
        let mut progress = Progress::new(1000, on(&screen), Duration::ZERO);
        for done in 0..1000 {
            progress.tick(done);
        }
        let drawn = screen.text().matches("simulating").count();
        assert!(drawn >= 1, "{drawn}");
        // Far fewer than a thousand, whatever the speed of the machine.
        assert!(drawn < 100, "{drawn}");
    }

    #[test]
    fn a_quick_simulation_shows_nothing() {
        let screen = Screen::default();
        let mut progress = Progress::new(400_000, on(&screen), Duration::from_secs(3600));
        progress.tick(100_000);
        progress.tick(400_000);
        progress.finish();
        assert_eq!(screen.text(), "");
    }

    #[test]
    fn off_a_terminal_nothing_is_drawn_whatever_the_time() {
        let mut progress = Progress::new(10, None, Duration::ZERO);
        progress.tick(5);
        assert!(progress.target.is_none());
        progress.finish();
    }

    #[test]
    fn numbers_are_grouped_by_thousands() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1000), "1,000");
        assert_eq!(grouped(1_800_000_000), "1,800,000,000");
        assert!(line(3, 0, Duration::from_secs(75)).ends_with("(100%), 1m 15s so far"));
    }
}
