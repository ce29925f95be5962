//! What a copy has read so far, counted as its rows pass ([`Tally`]), so that a job can show
//! its progress within a batch, not only when the batch ends; and the rows of a binary `COPY`
//! stream, counted without decoding them ([`TupleCounter`]).

use std::sync::atomic::{AtomicU64, Ordering};

/// Rows and bytes a copy has read so far. The copy adds to it as each page or chunk of the
/// stream passes; whoever shows the progress reads it meanwhile.
#[derive(Debug, Default)]
pub struct Tally {
    rows: AtomicU64,
    bytes: AtomicU64,
}

impl Tally {
    /// Counts `rows` more rows and `bytes` more bytes.
    pub(super) fn add(&self, rows: u64, bytes: u64) {
        self.rows.fetch_add(rows, Ordering::Relaxed);
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Rows and bytes counted so far.
    pub fn read(&self) -> (u64, u64) {
        (self.rows.load(Ordering::Relaxed), self.bytes.load(Ordering::Relaxed))
    }
}

/// The 11-byte signature and the 32-bit flags that open PostgreSQL's binary `COPY` format.
const HEADER_BYTES: u64 = 11 + 4;

/// Counts the tuples of a binary `COPY` stream fed in chunks cut anywhere: the header (its
/// signature, flags and extension), then each tuple, a 16-bit field count (-1 ends the stream)
/// and per field a 32-bit length (-1: null) and that many bytes.
#[derive(Debug)]
pub(super) struct TupleCounter {
    state: State,
    /// The bytes of the integer being read, and how many of them have arrived.
    integer: [u8; 4],
    have: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Bytes to pass over, and what comes after them.
    Skip(u64, After),
    /// The header extension's length.
    ExtensionLength,
    /// A tuple's field count.
    FieldCount,
    /// A field's length, with the fields of the tuple left after this one.
    FieldLength(u16),
    /// The trailer was read (or the stream made no sense): nothing more is counted.
    End,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum After {
    /// The signature and flags: the extension's length follows.
    Header,
    /// The extension: the first tuple follows.
    Extension,
    /// A field's bytes, with the fields of the tuple left after it.
    Field(u16),
}

impl Default for TupleCounter {
    fn default() -> Self {
        Self { state: State::Skip(HEADER_BYTES, After::Header), integer: [0; 4], have: 0 }
    }
}

impl TupleCounter {
    /// Reads `data`, the next bytes of the stream; gives how many tuples ended in them.
    pub(super) fn feed(&mut self, mut data: &[u8]) -> u64 {
        let mut tuples = 0;
        while !data.is_empty() {
            let width = match self.state {
                State::End => break,
                State::Skip(left, after) => {
                    let n = usize::try_from(left).unwrap_or(usize::MAX).min(data.len());
                    data = &data[n..];
                    let left = left - n as u64;
                    self.state = if left > 0 { State::Skip(left, after) } else { self.after(after, &mut tuples) };
                    continue;
                }
                State::FieldCount => 2,
                State::ExtensionLength | State::FieldLength(_) => 4,
            };
            let n = (width - self.have).min(data.len());
            self.integer[self.have..self.have + n].copy_from_slice(&data[..n]);
            self.have += n;
            data = &data[n..];
            if self.have < width {
                break;
            }
            self.have = 0;
            self.state = match self.state {
                State::ExtensionLength => State::Skip(u64::from(u32::from_be_bytes(self.integer)), After::Extension),
                State::FieldCount => match i16::from_be_bytes([self.integer[0], self.integer[1]]) {
                    0 => {
                        tuples += 1;
                        State::FieldCount
                    }
                    fields @ 1.. => State::FieldLength(fields.unsigned_abs() - 1),
                    _ => State::End,
                },
                State::FieldLength(left) => match i32::from_be_bytes(self.integer) {
                    -1 => self.after(After::Field(left), &mut tuples),
                    length @ 0.. => State::Skip(u64::from(length.unsigned_abs()), After::Field(left)),
                    _ => State::End,
                },
                other => other,
            };
        }
        tuples
    }

    /// The state after `after` was passed over (a tuple whose last field it was is counted).
    fn after(&self, after: After, tuples: &mut u64) -> State {
        match after {
            After::Header => State::ExtensionLength,
            After::Extension => State::FieldCount,
            After::Field(0) => {
                *tuples += 1;
                State::FieldCount
            }
            After::Field(left) => State::FieldLength(left - 1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A binary `COPY` stream of `rows`, each a list of fields (`None`: null).
    fn stream(rows: &[Vec<Option<&[u8]>>]) -> Vec<u8> {
        let mut out = b"PGCOPY\n\xff\r\n\0".to_vec();
        out.extend(0u32.to_be_bytes());
        out.extend(3u32.to_be_bytes());
        out.extend(b"ext");
        for row in rows {
            out.extend((row.len() as i16).to_be_bytes());
            for field in row {
                match field {
                    Some(bytes) => {
                        out.extend((bytes.len() as i32).to_be_bytes());
                        out.extend(*bytes);
                    }
                    None => out.extend((-1i32).to_be_bytes()),
                }
            }
        }
        out.extend((-1i16).to_be_bytes());
        out
    }

    #[test]
    fn the_tuples_of_a_binary_copy_are_counted_however_the_stream_is_cut() {
        let rows: Vec<Vec<Option<&[u8]>>> = vec![
            vec![Some(b"acme"), None, Some(&[0u8; 8])],
            vec![Some(b""), Some(b"x")],
            vec![],
            vec![Some(&[7u8; 300])],
        ];
        let bytes = stream(&rows);
        for cut in [1, 2, 3, 5, 7, 64, bytes.len()] {
            let mut counter = TupleCounter::default();
            let mut seen = Vec::new();
            for chunk in bytes.chunks(cut) {
                seen.push(counter.feed(chunk));
            }
            assert_eq!(seen.iter().sum::<u64>(), 4, "in chunks of {cut}");
            assert_eq!(counter.state, State::End, "in chunks of {cut}");
        }
        // Counted as each tuple ends, not when the stream does.
        let mut counter = TupleCounter::default();
        let first_ends = 15 + 4 + 3 + 2 + (4 + 4) + 4 + (4 + 8);
        assert_eq!(counter.feed(&bytes[..first_ends - 1]), 0);
        assert_eq!(counter.feed(&bytes[first_ends - 1..first_ends]), 1);
        assert_eq!(counter.feed(&[]), 0);
    }

    #[test]
    fn a_tally_adds_up_what_passed() {
        let tally = Tally::default();
        tally.add(3, 40);
        tally.add(1, 2);
        assert_eq!(tally.read(), (4, 42));
    }
}
