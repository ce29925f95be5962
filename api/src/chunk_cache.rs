//! The cache of blob chunks recently downloaded, shared by blob and valet downloads.

use std::sync::Arc;

use bytes::Bytes;
use shardgate_shard_router::ShardStore;
use shardgate_shard_router::blobs::{BlobMeta, BlobStore};
use shardgate_shard_router::{Database, Error as StoreError, ShardId};

/// Chunks recently read, by upload id and position. An upload's chunks never change and upload
/// ids are never reused, so an entry can never be stale; a replaced or deleted blob's chunks are
/// simply never asked for again (every download looks the blob up first) and age out.
#[derive(Debug, Clone)]
pub struct ChunkCache {
    chunks: Option<moka::future::Cache<(Arc<str>, u64), Bytes, foldhash::fast::RandomState>>,
}

impl ChunkCache {
    /// A cache of at most `max_bytes` (0: none).
    pub fn new(max_bytes: u64) -> Self {
        let chunks = (max_bytes > 0).then(|| {
            moka::future::Cache::builder()
                .max_capacity(max_bytes)
                .weigher(|_, chunk: &Bytes| u32::try_from(chunk.len()).unwrap_or(u32::MAX))
                .build_with_hasher(foldhash::fast::RandomState::default())
        });
        Self { chunks }
    }

    /// Chunk `seq` of `meta`: from the cache, else from the shard (one read per chunk however
    /// many downloads want it at once).
    pub async fn get(
        &self,
        db: &Database,
        shard: &ShardId,
        meta: &BlobMeta,
        upload: &Arc<str>,
        seq: u64,
    ) -> Result<Bytes, Arc<StoreError>> {
        let read = async { BlobStore::new(db, shard).read_chunk(meta, seq).await };
        match &self.chunks {
            Some(chunks) => chunks.try_get_with((upload.clone(), seq), read).await,
            None => read.await.map_err(Arc::new),
        }
    }
}
