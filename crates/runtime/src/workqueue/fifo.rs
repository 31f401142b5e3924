//! A FIFO that keeps its writes in warm memory.
//!
//! A `VecDeque` that has once grown large keeps marching its head and tail through the
//! whole buffer, so with a short queue every push writes a cache line last touched a full
//! lap earlier: a cache miss per push, the largest single cost of a queue add in profiles.
//! This FIFO is a list of small chunks; a chunk emptied at the front is recycled for the
//! back, most recently emptied first, so a short queue cycles through a few kilobytes.

use std::collections::VecDeque;

/// Keys per chunk.
const CHUNK: usize = 64;
/// Emptied chunks kept for reuse.
const SPARE: usize = 8;

pub(crate) struct Fifo<T> {
    chunks: VecDeque<VecDeque<T>>,
    spare: Vec<VecDeque<T>>,
    len: usize,
}

impl<T> Default for Fifo<T> {
    fn default() -> Self {
        Fifo {
            chunks: VecDeque::new(),
            spare: Vec::new(),
            len: 0,
        }
    }
}

impl<T> Fifo<T> {
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn push_back(&mut self, item: T) {
        match self.chunks.back_mut() {
            Some(last) if last.len() < CHUNK => last.push_back(item),
            _ => {
                let mut chunk = self
                    .spare
                    .pop()
                    .unwrap_or_else(|| VecDeque::with_capacity(CHUNK));
                chunk.push_back(item);
                self.chunks.push_back(chunk);
            }
        }
        self.len += 1;
    }

    pub(crate) fn pop_front(&mut self) -> Option<T> {
        let first = self.chunks.front_mut()?;
        let item = first.pop_front();
        if first.is_empty() {
            if let Some(mut chunk) = self.chunks.pop_front() {
                if self.spare.len() < SPARE {
                    // `clear` also rewinds the chunk to its start
                    chunk.clear();
                    self.spare.push(chunk);
                }
            }
        }
        if item.is_some() {
            self.len -= 1;
        }
        item
    }

    pub(crate) fn clear(&mut self) {
        self.chunks.clear();
        self.len = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_in_first_out_across_chunks_and_reuse() {
        let mut f = Fifo::default();
        let mut next_out = 0;
        let mut next_in = 0;
        for round in 0..50 {
            for _ in 0..(round * 7 % 200) {
                f.push_back(next_in);
                next_in += 1;
            }
            for _ in 0..(round * 5 % 150) {
                match f.pop_front() {
                    Some(v) => {
                        assert_eq!(v, next_out);
                        next_out += 1;
                    }
                    None => assert_eq!(next_out, next_in),
                }
            }
            assert_eq!(f.len(), next_in - next_out);
        }
        while let Some(v) = f.pop_front() {
            assert_eq!(v, next_out);
            next_out += 1;
        }
        assert_eq!(next_out, next_in);
        assert_eq!(f.len(), 0);
        f.push_back(1);
        f.clear();
        assert_eq!(f.pop_front(), None);
    }
}
