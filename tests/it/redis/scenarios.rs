//! The scenarios every store runs (tests/it/support/keyed.rs), here through Redis.

use super::*;

macro_rules! on_redis {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                let Some(server) = Server::start() else { return };
                keyed::$name(&Setup::redis(&server));
            }
        )*
    };
}

keyed::scenarios!(on_redis);
