//! `--list-keys`: every key with state, in the state directory or in the `--state` store, and
//! what its state says now. Nothing is changed: no lock is taken, nothing is written.

use std::time::{Duration, SystemTime};

use super::file::FileStore;
use super::redis::RedisStore;
use super::{Error, Shared, Store};
use crate::policy::KeySettings;
use crate::report::keys::{Listed, Listing};

/// Every key with state where `settings` say it is kept.
pub fn list(settings: &KeySettings) -> Result<Listing, Error> {
    match &settings.store {
        Some(store) => {
            let mut redis = RedisStore::new(store, "");
            let mut keys = Vec::new();
            for key in redis.keys()? {
                redis.switch_to(&key);
                let (view, now) = match redis.view(&settings.rules) {
                    Ok(reply) => (Ok(reply.view), reply.now),
                    Err(e) => (Err(e.to_string()), 0),
                };
                let ago = redis.last_used(&settings.rules).ok().flatten();
                let changed =
                    ago.and_then(|ms| SystemTime::now().checked_sub(Duration::from_millis(ms)));
                keys.push(Listed {
                    key,
                    view,
                    now,
                    changed,
                });
            }
            Ok(Listing {
                place: store.url.redacted(),
                keys,
            })
        }
        None => {
            let dir = settings.dir.as_deref().ok_or(Error::NoDirectory)?;
            let found = FileStore::all(dir).map_err(|source| Error::Io {
                doing: "read",
                path: dir.to_path_buf(),
                source,
            })?;
            let keys = found
                .into_iter()
                .map(|(key, store, changed)| {
                    let mut shared =
                        Shared::new(key.clone(), settings.rules.clone(), Box::new(store));
                    let view = shared.view().map_err(|e| e.to_string());
                    Listed {
                        key,
                        view,
                        now: shared.now(),
                        changed,
                    }
                })
                .collect();
            Ok(Listing {
                place: dir.display().to_string(),
                keys,
            })
        }
    }
}
