//! The cache of blob chunks recently downloaded, shared by blob and valet downloads, and the
//! single flight of the shard reads that fill it.
//!
//! A download asks for a *window* of consecutive chunks at a time ([`ChunkCache::window`]).
//! Chunks already cached are taken from the cache and never read again; each run of missing
//! chunks is read from the shard in one statement ([`BlobStore::read_window`]), and every chunk
//! read lands in the cache on its own. However many downloads want the same window at once, one
//! read of it runs (single flight per window, not per chunk): the others wait for it. The read runs in a task of its own, so a download
//! that goes away mid-read neither cancels it for the others nor leaves a half-read statement
//! holding a pooled connection; the task ends when its one statement has.

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use futures::FutureExt;
use futures::future::{BoxFuture, Shared};
use hashbrown::HashMap;
use parking_lot::Mutex;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::registry::Registry;
use shardgate_shard_router::ShardStore;
use shardgate_shard_router::blobs::{BlobMeta, BlobStore};
use shardgate_shard_router::{Database, Error as StoreError, ShardId};
use tracing::Instrument;

type Hasher = foldhash::fast::RandomState;

/// A window of chunks of one upload: its id, first and end (exclusive) position.
type WindowKey = (Arc<str>, u64, u64);

/// A read of a window in progress, awaited by every download that wants it.
type WindowRead = Shared<BoxFuture<'static, Result<Arc<[Bytes]>, Arc<StoreError>>>>;

/// Chunks recently read, by upload id and position, and the reads in progress. An upload's
/// chunks never change and upload ids are never reused, so an entry can never be stale; a
/// replaced or deleted blob's chunks are simply never asked for again (every download looks the
/// blob up first) and age out.
#[derive(Clone)]
pub struct ChunkCache {
    chunks: Option<moka::future::Cache<(Arc<str>, u64), Bytes, Hasher>>,
    in_flight: Arc<Mutex<HashMap<WindowKey, WindowRead, Hasher>>>,
    window_bytes: usize,
    reads: Counter,
}

impl std::fmt::Debug for ChunkCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChunkCache")
            .field("cached_bytes", &self.chunks.as_ref().map(|c| c.weighted_size()))
            .field("reads_in_flight", &self.in_flight.lock().len())
            .field("window_bytes", &self.window_bytes)
            .finish()
    }
}

impl ChunkCache {
    /// A cache of at most `max_bytes` (0: none) whose downloads read windows of at most
    /// `window_bytes` (at least one chunk); registers `shardgate_blob_chunk_reads_total` (shard
    /// statements that read chunks) in `registry`.
    pub fn new(max_bytes: u64, window_bytes: usize, registry: &mut Registry) -> Self {
        let chunks = (max_bytes > 0).then(|| {
            moka::future::Cache::builder()
                .max_capacity(max_bytes)
                .weigher(|_, chunk: &Bytes| u32::try_from(chunk.len()).unwrap_or(u32::MAX))
                .build_with_hasher(Hasher::default())
        });
        let reads = Counter::default();
        registry.register(
            "blob_chunk_reads",
            "Shard statements that read blob chunks (one per run of consecutive chunks missing from the chunk cache)",
            reads.clone(),
        );
        Self { chunks, in_flight: Arc::default(), window_bytes, reads }
    }

    /// The bound in bytes of one window (see [`BlobMeta::read_windows`]).
    pub fn window_bytes(&self) -> usize {
        self.window_bytes
    }

    /// Chunks `seqs` of `meta` (one window of [`BlobMeta::read_windows`]), in order: from the
    /// cache when all of them are there, else through the one read of this window in progress
    /// (started here if there is none), which reads each run of missing chunks in one statement.
    pub async fn window(
        &self,
        (db, shard): (&Database, &ShardId),
        meta: &BlobMeta,
        upload: &Arc<str>,
        seqs: Range<u64>,
    ) -> Result<Vec<Bytes>, Arc<StoreError>> {
        if let Some(chunks) = self.all_cached(upload, seqs.clone()).await {
            return Ok(chunks);
        }
        let key = (upload.clone(), seqs.start, seqs.end);
        let read = {
            let mut in_flight = self.in_flight.lock();
            match in_flight.get(&key) {
                Some(read) => read.clone(),
                None => {
                    // Spawned under the lock, so the task's removal of its entry (which takes the
                    // lock) always follows this insertion.
                    let read = self.spawn_read(key.clone(), db.clone(), shard.clone(), meta.clone());
                    in_flight.insert(key, read.clone());
                    read
                }
            }
        };
        Ok(read.await?.to_vec())
    }

    /// Every chunk of `seqs`, if all are cached.
    async fn all_cached(&self, upload: &Arc<str>, seqs: Range<u64>) -> Option<Vec<Bytes>> {
        let chunks = self.chunks.as_ref()?;
        let mut found = Vec::with_capacity(usize::try_from(seqs.end.saturating_sub(seqs.start)).unwrap_or(0));
        for seq in seqs {
            found.push(chunks.get(&(upload.clone(), seq)).await?);
        }
        Some(found)
    }

    /// Reads window `key` in a task: the chunks cached by now, and each run of missing ones in one
    /// statement, every chunk read put in the cache before the task leaves the reads in progress.
    fn spawn_read(&self, key: WindowKey, db: Database, shard: ShardId, meta: BlobMeta) -> WindowRead {
        let this = self.clone();
        let task = tokio::spawn(
            async move {
                // Dropped last: the entry goes only after the chunks are in the cache, so a download
                // that misses a chunk either joins this read or finds every chunk cached.
                let _finished = Finished { in_flight: this.in_flight.clone(), key: key.clone() };
                let (upload, seqs) = (key.0.clone(), key.1..key.2);
                let mut found = Vec::with_capacity(usize::try_from(seqs.end - seqs.start).unwrap_or(0));
                for seq in seqs.clone() {
                    found.push(match &this.chunks {
                        Some(chunks) => chunks.get(&(upload.clone(), seq)).await,
                        None => None,
                    });
                }
                let store = BlobStore::new(&db, &shard);
                let mut next = 0;
                while next < found.len() {
                    if found[next].is_some() {
                        next += 1;
                        continue;
                    }
                    let start = next;
                    while next < found.len() && found[next].is_none() {
                        next += 1;
                    }
                    let run = seqs.start + start as u64..seqs.start + next as u64;
                    this.reads.inc();
                    let chunks = store.read_window(&meta, run.clone()).await.map_err(Arc::new)?;
                    for ((seq, slot), chunk) in run.zip(&mut found[start..next]).zip(chunks) {
                        if let Some(cache) = &this.chunks {
                            cache.insert((upload.clone(), seq), chunk.clone()).await;
                        }
                        *slot = Some(chunk);
                    }
                }
                let chunks = found.into_iter().map(|chunk| chunk.ok_or_else(|| Arc::new(unread(&upload))));
                chunks.collect::<Result<Vec<_>, _>>().map(Arc::from)
            }
            // The read is traced in the span of the download that started it (others join it).
            .instrument(tracing::Span::current()),
        );
        async move {
            match task.await {
                Ok(outcome) => outcome,
                Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                // Only when the runtime shuts down.
                Err(_) => Err(Arc::new(StoreError::Timeout)),
            }
        }
        .boxed()
        .shared()
    }
}

/// Removes a finished read from the reads in progress, however its task ends.
struct Finished {
    in_flight: Arc<Mutex<HashMap<WindowKey, WindowRead, Hasher>>>,
    key: WindowKey,
}

impl Drop for Finished {
    fn drop(&mut self) {
        self.in_flight.lock().remove(&self.key);
    }
}

/// A chunk a window should hold but no read produced (a bug, never the client's doing).
fn unread(upload: &str) -> StoreError {
    StoreError::BlobProtocol(format!("a window of upload {upload} came back short"))
}
