//! A key's state in memory, on a clock its owner moves: for the loop's tests, and for the
//! simulator, where every simulated process holds a handle on one state.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use super::{Error, Local, Reply};
use crate::policy::shared::{KeyRules, KeyState};

/// A handle on one key's state; clones share it.
#[derive(Clone, Default)]
pub struct MemoryStore {
    state: Rc<RefCell<Option<KeyState>>>,
    /// The store's time, in milliseconds.
    pub now: Rc<Cell<u64>>,
}

impl MemoryStore {
    /// The state as it stands, if the key was ever used.
    pub fn state(&self) -> Option<KeyState> {
        self.state.borrow().clone()
    }
}

impl Local for MemoryStore {
    fn update<T>(
        &mut self,
        s: &KeyRules,
        op: impl Fn(&mut KeyState, u64) -> T,
    ) -> Result<Reply<T>, Error> {
        let now = self.now.get();
        let mut slot = self.state.borrow_mut();
        let state = slot.get_or_insert_with(|| KeyState::new(s, now));
        state.clamp(s, now);
        let value = op(state, now);
        Ok(Reply {
            value,
            now,
            view: state.view(s, now),
            warning: None,
        })
    }

    fn reset(&mut self) -> Result<(), Error> {
        *self.state.borrow_mut() = None;
        Ok(())
    }

    fn describe(&self) -> String {
        "memory".into()
    }
}
