//! The random source of a run's jitter, made when the first wait is jittered.
//!
//! Most runs succeed at the first attempt and never wait. Making the generator costs a
//! `getrandom` call and, inside ChaCha's constructor, the CPU-feature probe that picks its
//! AVX2 or SSE2 code: CPUID instructions, each of which a virtual machine traps and
//! emulates. On the 2-core VM this was measured on, `perf record` put 1.1% of the samples of
//! 1,000 runs of `retry -- /bin/true` there, but timed pair by pair against the eager
//! generator a run was only about 2 µs (0.2%) faster, within the noise. Made on first use,
//! the generator costs nothing in a run that does not wait, and draws the same numbers from
//! the same seed.

use std::convert::Infallible;

use rand::rngs::SysRng;
use rand::{SeedableRng, TryRng};

use crate::policy::backoff::{SeededRng, seeded};

/// The generator of `--seed` ([`SeededRng`]), seeded from `--seed` or from the system, on
/// first use. Unseeded, it is the same cheap generator: nothing needs its stream to be fixed,
/// and one type keeps a seeded and an unseeded run on the same code.
pub struct JitterRng {
    seed: Option<u64>,
    rng: Option<SeededRng>,
}

impl JitterRng {
    pub fn new(seed: Option<u64>) -> Self {
        JitterRng { seed, rng: None }
    }

    fn get(&mut self) -> &mut SeededRng {
        let seed = self.seed;
        self.rng.get_or_insert_with(|| match seed {
            Some(seed) => seeded(seed),
            // Seeded from the system directly, not through the thread's generator, which
            // makes a block of output at once.
            None => SeededRng::try_from_rng(&mut SysRng).unwrap_or_else(|_| rand::make_rng()),
        })
    }
}

impl TryRng for JitterRng {
    type Error = Infallible;

    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        self.get().try_next_u32()
    }

    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        self.get().try_next_u64()
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Infallible> {
        self.get().try_fill_bytes(dst)
    }
}

#[cfg(test)]
mod tests {
    use rand::{Rng, RngExt};

    use super::*;

    #[test]
    fn nothing_is_made_until_a_number_is_drawn() {
        let mut rng = JitterRng::new(None);
        assert!(rng.rng.is_none());
        let _: u64 = rng.random();
        assert!(rng.rng.is_some());
    }

    #[test]
    fn a_seed_gives_what_the_seeded_generator_gives() {
        let mut lazy = JitterRng::new(Some(42));
        let mut eager = seeded(42);
        let drawn: Vec<u64> = (0..8).map(|_| lazy.next_u64()).collect();
        let expected: Vec<u64> = (0..8).map(|_| eager.next_u64()).collect();
        assert_eq!(drawn, expected);
        let (mut a, mut b) = ([0u8; 37], [0u8; 37]);
        lazy.fill_bytes(&mut a);
        eager.fill_bytes(&mut b);
        assert_eq!(a, b);
        assert_eq!(lazy.next_u32(), eager.next_u32());
    }

    #[test]
    fn unseeded_generators_differ() {
        let (mut a, mut b) = (JitterRng::new(None), JitterRng::new(None));
        assert_ne!(a.next_u64(), b.next_u64());
    }
}
