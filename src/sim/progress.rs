//! The progress line of `retry --explain --fleet`: how many of the runs of the job to simulate
//! have started, on one line of stderr that is cleared before the table is printed. Only on a
//! terminal, and only once the simulation has taken longer than a second: a quick answer
//! shows nothing but the answer.

use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How long a simulation runs before its progress is shown.
pub const DUE: Duration = Duration::from_secs(1);

/// The line, hidden until it is due.
pub struct Progress {
    bar: ProgressBar,
    /// Where the line goes once it is due; `None` once it is there, or when it goes nowhere.
    target: Option<ProgressDrawTarget>,
    due: Instant,
}

impl Progress {
    /// A line for `total` runs of the job, drawn on `target` once `after` has passed.
    pub fn new(total: u64, target: Option<ProgressDrawTarget>, after: Duration) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden());
        let style = ProgressStyle::with_template(
            "retry: simulating the fleet: {human_pos} of {human_len} runs of the job \
             ({percent}%), {elapsed} so far",
        );
        if let Ok(style) = style {
            bar.set_style(style);
        }
        Progress {
            bar,
            target,
            due: Instant::now() + after,
        }
    }

    /// The line on stderr when it is a terminal and `shown` (not `-q`), after [`DUE`].
    pub fn on_stderr(total: u64, shown: bool) -> Progress {
        use std::io::IsTerminal;
        let terminal = shown && std::io::stderr().is_terminal();
        Progress::new(total, terminal.then(ProgressDrawTarget::stderr), DUE)
    }

    /// `done` runs have started.
    pub fn tick(&mut self, done: u64) {
        self.bar.set_position(done);
        if Instant::now() >= self.due
            && let Some(target) = self.target.take()
        {
            self.bar.set_draw_target(target);
            self.bar.tick();
        }
    }

    /// The simulation is over: the line is cleared, and the cursor is where it was.
    pub fn finish(self) {
        self.bar.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use std::io;
    use std::sync::{Arc, Mutex};

    use indicatif::TermLike;

    use super::*;

    /// A terminal that keeps what is written to it.
    #[derive(Clone, Debug, Default)]
    struct Screen(Arc<Mutex<String>>);

    impl Screen {
        fn text(&self) -> String {
            self.0.lock().expect("the screen").clone()
        }
        fn put(&self, s: &str) -> io::Result<()> {
            self.0.lock().expect("the screen").push_str(s);
            Ok(())
        }
    }

    impl TermLike for Screen {
        fn width(&self) -> u16 {
            120
        }
        fn move_cursor_up(&self, _: usize) -> io::Result<()> {
            self.put("<up>")
        }
        fn move_cursor_down(&self, _: usize) -> io::Result<()> {
            self.put("<down>")
        }
        fn move_cursor_right(&self, _: usize) -> io::Result<()> {
            Ok(())
        }
        fn move_cursor_left(&self, _: usize) -> io::Result<()> {
            Ok(())
        }
        fn write_line(&self, s: &str) -> io::Result<()> {
            self.put(s)?;
            self.put("\n")
        }
        fn write_str(&self, s: &str) -> io::Result<()> {
            self.put(s)
        }
        fn clear_line(&self) -> io::Result<()> {
            self.put("<clear>")
        }
        fn flush(&self) -> io::Result<()> {
            Ok(())
        }
    }

    fn on(screen: &Screen) -> Option<ProgressDrawTarget> {
        Some(ProgressDrawTarget::term_like(Box::new(screen.clone())))
    }

    #[test]
    fn a_simulation_past_its_due_time_shows_its_runs_and_clears_the_line() {
        let screen = Screen::default();
        let mut progress = Progress::new(400_000, on(&screen), Duration::ZERO);
        progress.tick(100_000);
        let shown = screen.text();
        assert!(
            shown.contains("simulating the fleet: 100,000 of 400,000 runs of the job (25%)"),
            "{shown:?}"
        );
        progress.finish();
        let after = screen.text()[shown.len()..].to_string();
        assert!(after.contains("<clear>"), "{after:?}");
        assert!(!after.contains("simulating"), "{after:?}");
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
        assert!(progress.bar.is_hidden());
        progress.finish();
    }
}
