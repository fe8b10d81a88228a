//! A store for the tests of a run's calls to its key (run/keyed_tests.rs, handle_tests.rs).

use super::memory::MemoryStore;
use super::{Error, Reply, Store};
use crate::policy::breaker::Attempt;
use crate::policy::shared::{Admit, After, KeyRules, Refusal, Ticket};

/// A store in memory whose operations are first shown to a hook, by name ("admit", "after",
/// "before"; "idle" when the run lets its connection go), which may refuse them: one way for
/// the tests to count, record or fail a run's calls to its key.
#[derive(Clone)]
pub(crate) struct Watched {
    /// The store the operations go to, with its clock.
    pub(crate) memory: MemoryStore,
    hook: std::rc::Rc<dyn Fn(&'static str) -> Result<(), Error>>,
    /// How long the run let each operation wait, as it said before each.
    pub(crate) waits: std::rc::Rc<std::cell::RefCell<Vec<Option<std::time::Duration>>>>,
}

impl Watched {
    pub(crate) fn new(hook: impl Fn(&'static str) -> Result<(), Error> + 'static) -> Watched {
        Watched {
            memory: MemoryStore::default(),
            hook: std::rc::Rc::new(hook),
            waits: std::rc::Rc::default(),
        }
    }
}

impl Store for Watched {
    fn admit(&mut self, s: &KeyRules) -> Result<Reply<Admit>, Error> {
        (self.hook)("admit")?;
        Store::admit(&mut self.memory, s)
    }
    fn after_attempt(
        &mut self,
        s: &KeyRules,
        ticket: Ticket,
        attempt: Attempt,
        wants_retry: bool,
        u: f64,
    ) -> Result<Reply<After>, Error> {
        (self.hook)("after")?;
        Store::after_attempt(&mut self.memory, s, ticket, attempt, wants_retry, u)
    }
    fn before_retry(
        &mut self,
        s: &KeyRules,
        ticket: Ticket,
    ) -> Result<Reply<(Option<Refusal>, Ticket)>, Error> {
        (self.hook)("before")?;
        Store::before_retry(&mut self.memory, s, ticket)
    }
    fn view(&mut self, s: &KeyRules) -> Result<Reply<()>, Error> {
        Store::view(&mut self.memory, s)
    }
    fn reset(&mut self) -> Result<(), Error> {
        Store::reset(&mut self.memory)
    }
    fn describe(&self) -> String {
        "watched".into()
    }
    fn idle(&mut self) {
        let _ = (self.hook)("idle");
    }
    fn wait_at_most(&mut self, most: Option<std::time::Duration>) {
        self.waits.borrow_mut().push(most);
    }
}
