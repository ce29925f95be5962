//! A small deterministic generator (xorshift64*) for the property tests of this crate, in its
//! modules and in `tests/`: thousands of cases without a property-testing dependency, the same
//! cases on every run. Not part of the API.

/// The generator; its state is the seed (any value but zero).
#[derive(Debug, Clone)]
pub struct XorShift(pub u64);

impl XorShift {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}
