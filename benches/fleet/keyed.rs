//! retry's breaker and budget for the oracles' models: one request of a model is one run of
//! retry on a key, through the same [`Shared`] handle a real run uses, over in-memory stores
//! on the model's clock: one per client (`--key` on each host) or one for them all (`--key`
//! with `--state`).

use rand::RngExt;
use rand::rngs::ChaCha8Rng;

use retry::policy::breaker::Attempt;
use retry::policy::shared::KeyRules;
use retry::sim::Nanos;
use retry::state::Shared;
use retry::state::memory::MemoryStore;

/// Where the clients keep the key's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    PerClient,
    Shared,
}

/// The key's stores, one per client or one for all.
pub struct Keyed {
    settings: KeyRules,
    stores: Vec<MemoryStore>,
}

impl Keyed {
    pub fn new(settings: KeyRules, scope: Scope, clients: usize) -> Keyed {
        let one = MemoryStore::default();
        let stores = (0..clients.max(1))
            .map(|_| match scope {
                Scope::Shared => one.clone(),
                Scope::PerClient => MemoryStore::default(),
            })
            .collect();
        Keyed { settings, stores }
    }

    fn store(&self, client: usize, now: Nanos) -> &MemoryStore {
        let store = &self.stores[client % self.stores.len()];
        store.now.set(now / 1_000_000);
        store
    }

    /// A run starts: its handle, or `None` when the breaker refuses it (exit 75).
    pub fn begin(&self, client: usize, now: Nanos) -> Option<Shared> {
        let store = self.store(client, now);
        let mut shared = Shared::new(
            "oracle".into(),
            self.settings.clone(),
            Box::new(store.clone()),
        );
        match shared.admit() {
            Ok(None) => Some(shared),
            _ => None,
        }
    }

    /// An attempt ended; `wants_retry` when the run would retry. Whether the key lets it.
    pub fn after(
        &self,
        shared: &mut Shared,
        client: usize,
        now: Nanos,
        ok: bool,
        wants_retry: bool,
        rng: &mut ChaCha8Rng,
    ) -> bool {
        self.store(client, now);
        let attempt = if ok {
            Attempt::Success
        } else {
            Attempt::Failure
        };
        let u = rng.random::<f64>();
        match shared.after_attempt(attempt, wants_retry, u) {
            Ok((_, Some(_))) => false,
            _ => wants_retry,
        }
    }

    /// Just before a retry, after its wait: whether the breaker still lets it through.
    pub fn before_retry(&self, shared: &mut Shared, client: usize, now: Nanos) -> bool {
        self.store(client, now);
        !matches!(shared.before_retry(), Ok(Some(_)))
    }
}
