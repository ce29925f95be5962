//! Merging the sorted pages of a fan-out look-up. A range look-up asks every shard for its
//! first `limit` entries after the cursor, in (value key, record key) order; the first `limit`
//! entries of the merge are then exactly the first `limit` entries of the whole index, because
//! each of them is among the first `limit` of its own shard.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use crate::entry_store::{EntryAfter, EntryState, StoredEntry};

/// Where the next page of a look-up starts (strictly after this entry).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryCursor {
    /// The value key of the last entry returned.
    pub value_key: String,
    /// The record key of the last entry returned.
    pub record_key: String,
}

impl EntryCursor {
    /// The cursor as the shard look-ups take it.
    pub fn as_after(&self) -> EntryAfter<'_> {
        EntryAfter { value_key: &self.value_key, record_key: &self.record_key }
    }
}

/// One page of a merged look-up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergedPage {
    /// At most `limit` entries, in (value key, record key) order, each (value, record) once.
    pub entries: Vec<StoredEntry>,
    /// Where the next page starts, if there may be more.
    pub next: Option<EntryCursor>,
}

/// The head of one page in the merge heap: the smallest (value key, record key) pops first.
struct Head {
    entry: StoredEntry,
    page: usize,
}

impl Head {
    fn order_key(&self) -> (&str, &str) {
        (&self.entry.value_key, &self.entry.record_key)
    }
}

impl PartialEq for Head {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Head {}

impl PartialOrd for Head {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Head {
    fn cmp(&self, other: &Self) -> Ordering {
        // Reversed: `BinaryHeap` is a max-heap. Ties break on the page, for a stable merge.
        other.order_key().cmp(&self.order_key()).then(other.page.cmp(&self.page))
    }
}

/// Merges `pages` (one per shard, each sorted by (value key, record key) and fetched with the
/// same bounds, cursor and `limit`) into the first `limit` entries overall. An entry found on
/// two shards (a vshard caught mid-move) appears once: the copy with the newer record version,
/// live before pending. `next` is set when a page was full or entries were left over.
pub fn merge_pages(pages: Vec<Vec<StoredEntry>>, limit: u32) -> MergedPage {
    let limit = limit as usize;
    let any_page_full = pages.iter().any(|page| page.len() >= limit);
    let mut rest: Vec<std::vec::IntoIter<StoredEntry>> = pages.into_iter().map(Vec::into_iter).collect();
    let mut heap = BinaryHeap::with_capacity(rest.len());
    for (page, entries) in rest.iter_mut().enumerate() {
        if let Some(entry) = entries.next() {
            heap.push(Head { entry, page });
        }
    }
    let mut merged: Vec<StoredEntry> = Vec::with_capacity(limit);
    let mut left_over = false;
    while let Some(Head { entry, page }) = heap.pop() {
        if let Some(next) = rest[page].next() {
            debug_assert!(
                (&next.value_key, &next.record_key) >= (&entry.value_key, &entry.record_key),
                "pages must be sorted"
            );
            heap.push(Head { entry: next, page });
        }
        let full = merged.len() == limit;
        match merged.last_mut() {
            Some(last) if last.value_key == entry.value_key && last.record_key == entry.record_key => {
                if preference(&entry) > preference(last) {
                    *last = entry;
                }
            }
            _ if full => {
                left_over = true;
                break;
            }
            _ => merged.push(entry),
        }
    }
    let next = if left_over || any_page_full {
        merged.last().map(|e| EntryCursor { value_key: e.value_key.clone(), record_key: e.record_key.clone() })
    } else {
        None
    };
    MergedPage { entries: merged, next }
}

/// Which of two copies of one entry to keep: the newer record version, then live over pending.
fn preference(entry: &StoredEntry) -> (i64, bool) {
    (entry.record_version, entry.state == EntryState::Live)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(value: &str, record: &str) -> StoredEntry {
        StoredEntry {
            value_key: value.to_owned(),
            record_key: record.to_owned(),
            vshard: 0,
            record_vshard: 0,
            record_version: 1,
            state: EntryState::Live,
            claimed_at_ms: 0,
            copy: None,
        }
    }

    fn keys(page: &MergedPage) -> Vec<(&str, &str)> {
        page.entries.iter().map(|e| (e.value_key.as_str(), e.record_key.as_str())).collect()
    }

    #[test]
    fn pages_merge_in_value_then_record_order() {
        let pages = vec![
            vec![entry("a", "2"), entry("c", "1")],
            vec![entry("a", "1"), entry("b", "9"), entry("d", "1")],
            vec![],
            vec![entry("b", "1")],
        ];
        let page = merge_pages(pages, 10);
        assert_eq!(keys(&page), [("a", "1"), ("a", "2"), ("b", "1"), ("b", "9"), ("c", "1"), ("d", "1")]);
        assert_eq!(page.next, None);
    }

    #[test]
    fn truncation_and_full_pages_set_the_cursor() {
        let pages = vec![vec![entry("a", "1"), entry("c", "1")], vec![entry("b", "1")]];
        let page = merge_pages(pages, 2);
        assert_eq!(keys(&page), [("a", "1"), ("b", "1")]);
        assert_eq!(page.next, Some(EntryCursor { value_key: "b".into(), record_key: "1".into() }));
        // Nothing left over, but a shard's page was full: it may hold more.
        let page = merge_pages(vec![vec![entry("a", "1"), entry("b", "1")], vec![]], 2);
        assert_eq!(page.next.map(|c| c.value_key), Some("b".to_owned()));
        assert_eq!(merge_pages(vec![vec![], vec![]], 2), MergedPage { entries: vec![], next: None });
    }

    #[test]
    fn an_entry_on_two_shards_appears_once_newest_first() {
        let old = entry("a", "1");
        let newer = StoredEntry { record_version: 2, state: EntryState::Pending, ..entry("a", "1") };
        let page = merge_pages(vec![vec![old.clone(), entry("b", "1")], vec![newer.clone()]], 10);
        assert_eq!(keys(&page), [("a", "1"), ("b", "1")]);
        assert_eq!(page.entries[0], newer);
        let live = StoredEntry { record_version: 2, ..entry("a", "1") };
        let page = merge_pages(vec![vec![newer], vec![live.clone()]], 10);
        assert_eq!(page.entries, [live]);
    }
}
