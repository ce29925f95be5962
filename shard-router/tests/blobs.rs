//! Blobs on a shard, on both engines: chunked writes read back byte for byte, overwrites that
//! readers see whole or not at all, preconditions, aborts and garbage that leave nothing behind,
//! tombstones, ordered listings, the shard fence and tenant purges; chunks read a window per
//! statement, with missing and corrupt chunks told apart.

mod common;

use common::TestDb;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::TryStreamExt;
use sha2::{Digest, Sha256};
use shardgate_shard_router::ShardStore;
use shardgate_shard_router::blobs::{
    BLOB_CHUNK_BYTES, BLOB_READ_WINDOW_BYTES, BlobCommit, BlobCondition, BlobMeta, BlobPath, BlobRead, BlobStore,
    CommitOutcome, Upload, UploadState,
};
use shardgate_shard_router::catalog::Audit;
use shardgate_shard_router::records::RecordStore;
use shardgate_shard_router::router::{ShardRouter, StorageConfig};
use shardgate_shard_router::{Error, ShardId, TenantId, Tier, Topology};

const CHUNK: usize = BLOB_CHUNK_BYTES;

impl TestDb {
    /// How many chunk rows an upload has.
    async fn chunk_rows(&self, upload_id: &str) -> i64 {
        sqlx::query_scalar("SELECT COUNT(*) FROM blob_chunks WHERE upload_id = $1")
            .bind(upload_id)
            .fetch_one(&self.db.pool)
            .await
            .unwrap()
    }

    /// How many rows `table` has for `tenant`, or all tenants.
    async fn rows(&self, table: &str, tenant: Option<&TenantId>) -> i64 {
        let filter = if tenant.is_some() { " WHERE tenant = $1" } else { "" };
        let sql = format!("SELECT COUNT(*) FROM {table}{filter}");
        let mut query = sqlx::query_scalar(&sql);
        if let Some(tenant) = tenant {
            query = query.bind(tenant.as_str());
        }
        query.fetch_one(&self.db.pool).await.unwrap()
    }
}

fn acme() -> TenantId {
    TenantId::parse("acme").unwrap()
}

fn shard() -> ShardId {
    ShardId::parse("shard-0").unwrap()
}

fn path(raw: &str) -> BlobPath {
    BlobPath::parse(raw).unwrap()
}

/// `len` bytes that differ per `seed` and per position (so a chunk out of place shows).
fn bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

fn sha_hex(data: &[u8]) -> String {
    format!("{:x}", Sha256::digest(data))
}

/// Begins an upload of `data` to `path` and puts all its chunks, as the HTTP layer would.
async fn stage(store: &BlobStore<'_>, tenant: &TenantId, path: &BlobPath, data: &[u8], now: i64) -> Upload {
    let upload = store.begin_upload(tenant, path, 7, now).await.unwrap();
    for (seq, chunk) in data.chunks(CHUNK).enumerate() {
        store.put_chunk(&upload, seq as u64, chunk, now).await.unwrap();
    }
    upload
}

/// The commit of an upload that staged `data` with [`stage`].
fn blob_commit(data: &[u8], condition: BlobCondition) -> BlobCommit {
    BlobCommit {
        size: data.len() as u64,
        sha256_hex: sha_hex(data),
        content_type: "application/octet-stream".into(),
        chunk_count: data.len().div_ceil(CHUNK) as u64,
        condition,
    }
}

async fn write(
    store: &BlobStore<'_>,
    raw_path: &str,
    data: &[u8],
    condition: BlobCondition,
    now: i64,
) -> Result<CommitOutcome, Error> {
    let upload = stage(store, &acme(), &path(raw_path), data, now).await;
    store.commit(&upload, blob_commit(data, condition), now).await
}

async fn read_all(store: &BlobStore<'_>, blob: &BlobMeta) -> Result<Vec<u8>, Error> {
    let chunks: Vec<_> = store.read_chunks(blob, 0..blob.chunk_count)?.try_collect().await?;
    Ok(chunks.concat())
}

async fn multi_chunk_round_trip(test: TestDb) {
    let shard = shard();
    let store = BlobStore::new(&test.db, &shard).routed_at(0);
    let data = bytes(2 * CHUNK + 1234, 1);
    let upload = stage(&store, &acme(), &path("docs/report.bin"), &data, 1_000).await;
    let commit = BlobCommit {
        size: data.len() as u64,
        sha256_hex: sha_hex(&data).to_ascii_uppercase(),
        content_type: "application/pdf".into(),
        chunk_count: 3,
        condition: BlobCondition::Absent,
    };
    let outcome = store.commit(&upload, commit, 2_000).await.unwrap();
    assert!(outcome.created);
    let blob = outcome.blob;
    assert_eq!((blob.version, blob.size, blob.chunk_count, blob.chunk_size), (1, data.len() as u64, 3, CHUNK as u32));
    assert_eq!(blob.sha256, sha_hex(&data), "stored lowercase");
    assert_eq!((blob.content_type.as_str(), blob.vshard, blob.upload_id.as_str()), ("application/pdf", 7, upload.id()));
    assert_eq!((blob.created_at_ms, blob.updated_at_ms), (2_000, 2_000));
    assert_eq!(store.head(&acme(), &path("docs/report.bin")).await.unwrap(), Some(blob.clone()));
    assert_eq!(store.upload_state(upload.id()).await.unwrap(), Some(UploadState::Live));

    assert_eq!(sha_hex(&read_all(&store, &blob).await.unwrap()), blob.sha256);
    assert!(read_all(&store, &blob).await.unwrap() == data, "byte-exact");
    // A byte range: the HTTP layer maps it to chunks and trims the ends.
    let range = (CHUNK as u64 - 10)..(2 * CHUNK as u64 + 5);
    let chunks = blob.chunks_covering(range.clone());
    assert_eq!(chunks, 0..3);
    let tail: Vec<_> = store.read_chunks(&blob, 1..3).unwrap().try_collect().await.unwrap();
    assert!(tail.concat() == data[CHUNK..]);
    assert!(store.read_chunk(&blob, 2).await.unwrap() == data[2 * CHUNK..]);
    assert!(matches!(store.read_chunk(&blob, 3).await, Err(Error::BlobProtocol(_))));
    assert!(store.read_chunks(&blob, 2..4).is_err());

    // Exactly full chunks, and the empty blob.
    let full = bytes(2 * CHUNK, 2);
    let blob = write(&store, "docs/full.bin", &full, BlobCondition::Always, 3_000).await.unwrap().blob;
    assert_eq!(blob.chunk_count, 2);
    assert!(read_all(&store, &blob).await.unwrap() == full);
    let blob = write(&store, "docs/empty", &[], BlobCondition::Absent, 3_000).await.unwrap().blob;
    assert_eq!((blob.size, blob.chunk_count, blob.sha256.as_str()), (0, 0, sha_hex(&[]).as_str()));
    assert!(read_all(&store, &blob).await.unwrap().is_empty());
    test.drop_db().await;
}

async fn windows_read_consecutive_chunks_in_one_statement(test: TestDb) {
    let shard = shard();
    let store = BlobStore::new(&test.db, &shard).routed_at(0);
    // Seven chunks, the last one short: windows of four chunks are 0..4 and 4..7.
    let data = bytes(6 * CHUNK + 1000, 11);
    let blob = write(&store, "big.bin", &data, BlobCondition::Absent, 1_000).await.unwrap().blob;
    assert_eq!((blob.chunk_count, blob.chunks_per_window(BLOB_READ_WINDOW_BYTES)), (7, 4));
    let windows = |seqs, window_bytes| blob.read_windows(seqs, window_bytes).collect::<Vec<_>>();
    assert_eq!(windows(0..7, BLOB_READ_WINDOW_BYTES), [0..4, 4..7]);
    assert_eq!(windows(2..6, BLOB_READ_WINDOW_BYTES), [2..4, 4..6], "aligned, so other ranges share windows");
    assert_eq!(windows(3..7, BLOB_READ_WINDOW_BYTES), [3..4, 4..7], "the last window ends with the blob");
    assert_eq!(windows(3..3, BLOB_READ_WINDOW_BYTES), Vec::<std::ops::Range<u64>>::new());
    assert_eq!(windows(0..3, 1), [0..1, 1..2, 2..3], "a window holds at least one chunk");

    let read = |seqs: std::ops::Range<u64>| {
        let (store, blob) = (&store, &blob);
        async move { store.read_window(blob, seqs).await.map(|chunks| chunks.concat()) }
    };
    assert!(read(0..4).await.unwrap() == data[..4 * CHUNK]);
    assert!(read(4..7).await.unwrap() == data[4 * CHUNK..], "ends with the short chunk");
    assert!(read(3..5).await.unwrap() == data[3 * CHUNK..5 * CHUNK], "across a window boundary");
    assert!(read(6..7).await.unwrap() == data[6 * CHUNK..]);
    assert!(read(2..2).await.unwrap().is_empty());
    assert!(matches!(read(5..8).await, Err(Error::BlobProtocol(_))), "past the end");
    assert!(read_all(&store, &blob).await.unwrap() == data, "read_chunks streams every window");
    // A byte range maps to chunks, read by windows and trimmed by the caller.
    let range = (3 * CHUNK as u64 + 17)..(6 * CHUNK as u64 + 500);
    let seqs = blob.chunks_covering(range.clone());
    assert_eq!(seqs, 3..7);
    let mut covered = Vec::new();
    for window in blob.read_windows(seqs.clone(), BLOB_READ_WINDOW_BYTES) {
        covered.extend(store.read_window(&blob, window).await.unwrap().concat());
    }
    let offset = (seqs.start * CHUNK as u64) as usize;
    assert!(
        covered[range.start as usize - offset..range.end as usize - offset]
            == data[range.start as usize..range.end as usize]
    );

    // A missing chunk (collected after its blob was replaced) is BlobNotFound, whether it sits
    // inside the window or at its end.
    let delete = |seq: i64| {
        let (pool, upload) = (&test.db.pool, blob.upload_id.clone());
        async move {
            sqlx::query("DELETE FROM blob_chunks WHERE upload_id = $1 AND seq = $2")
                .bind(upload)
                .bind(seq)
                .execute(pool)
                .await
                .unwrap();
        }
    };
    delete(5).await;
    assert!(matches!(read(4..7).await, Err(Error::BlobNotFound)));
    assert!(matches!(store.read_chunk(&blob, 5).await, Err(Error::BlobNotFound)));
    assert!(read(0..5).await.unwrap() == data[..5 * CHUNK], "the chunks before it still read");
    delete(6).await;
    assert!(matches!(read(6..7).await, Err(Error::BlobNotFound)));
    assert!(matches!(read(4..7).await, Err(Error::BlobNotFound)));

    // A chunk of the wrong length is corrupt, in a window as on its own.
    sqlx::query("UPDATE blob_chunks SET data = $1 WHERE upload_id = $2 AND seq = 1")
        .bind(vec![0u8; 10])
        .bind(&blob.upload_id)
        .execute(&test.db.pool)
        .await
        .unwrap();
    assert!(matches!(read(0..4).await, Err(Error::Corrupt(_))));
    assert!(matches!(store.read_chunk(&blob, 1).await, Err(Error::Corrupt(_))));
    assert!(read(2..5).await.unwrap() == data[2 * CHUNK..5 * CHUNK]);
    test.drop_db().await;
}

async fn overwrite_is_atomic(test: TestDb) {
    let shard = shard();
    let store = BlobStore::new(&test.db, &shard).routed_at(0);
    let old_data = bytes(CHUNK + 100, 3);
    let old = write(&store, "img/cat.png", &old_data, BlobCondition::Absent, 1_000).await.unwrap().blob;

    // Staged but not committed: readers still see the old blob only.
    let new_data = bytes(3 * CHUNK - 7, 4);
    let upload = stage(&store, &acme(), &path("img/cat.png"), &new_data, 2_000).await;
    assert_eq!(store.head(&acme(), &path("img/cat.png")).await.unwrap(), Some(old.clone()));
    assert_eq!(store.upload_state(upload.id()).await.unwrap(), Some(UploadState::Staging));

    let outcome = store
        .commit(&upload, blob_commit(&new_data, BlobCondition::Sha256In(vec![old.sha256.clone()])), 3_000)
        .await
        .unwrap();
    assert!(!outcome.created);
    let new = outcome.blob;
    assert_eq!((new.version, new.created_at_ms, new.updated_at_ms), (2, 1_000, 3_000));
    assert_eq!(store.head(&acme(), &path("img/cat.png")).await.unwrap(), Some(new.clone()));
    assert!(read_all(&store, &new).await.unwrap() == new_data);
    // A reader that looked up the old blob before the switch still streams it whole.
    assert!(read_all(&store, &old).await.unwrap() == old_data);
    assert_eq!(store.upload_state(&old.upload_id).await.unwrap(), Some(UploadState::Superseded));
    assert_eq!(store.upload_state(&new.upload_id).await.unwrap(), Some(UploadState::Live));
    test.drop_db().await;
}

async fn readers_never_see_a_mix(test: TestDb) {
    let shard = Arc::new(shard());
    let store = BlobStore::new(&test.db, &shard);
    write(&store, "hot", &bytes(CHUNK + 1, 100), BlobCondition::Always, 1).await.unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let mut readers = Vec::new();
    for _ in 0..2 {
        let (db, shard, done) = (test.db.clone(), shard.clone(), done.clone());
        readers.push(tokio::spawn(async move {
            let store = BlobStore::new(&db, &shard);
            let mut reads = 0;
            while !done.load(Ordering::Relaxed) || reads == 0 {
                let blob = store.head(&acme(), &path("hot")).await.unwrap().unwrap();
                let data = read_all(&store, &blob).await.unwrap();
                assert_eq!(data.len() as u64, blob.size);
                assert_eq!(sha_hex(&data), blob.sha256, "version {} read whole", blob.version);
                reads += 1;
            }
            reads
        }));
    }
    for i in 0..6u64 {
        let data = bytes(CHUNK * (1 + i as usize % 3) + 17 * i as usize, 200 + i);
        write(&store, "hot", &data, BlobCondition::Exists, 10 + i as i64).await.unwrap();
    }
    done.store(true, Ordering::Relaxed);
    for reader in readers {
        assert!(reader.await.unwrap() > 0);
    }
    assert_eq!(store.head(&acme(), &path("hot")).await.unwrap().unwrap().version, 7);
    test.drop_db().await;
}

async fn failed_precondition_leaves_nothing_staged(test: TestDb) {
    let shard = shard();
    let store = BlobStore::new(&test.db, &shard).routed_at(0);
    let existing = write(&store, "a.txt", b"first", BlobCondition::Absent, 1_000).await.unwrap().blob;
    let data = bytes(CHUNK + 5, 5);

    for condition in [BlobCondition::Absent, BlobCondition::Sha256In(vec![sha_hex(b"something else")])] {
        let upload = stage(&store, &acme(), &path("a.txt"), &data, 2_000).await;
        assert_eq!(test.chunk_rows(upload.id()).await, 2);
        let refused = store.commit(&upload, blob_commit(&data, condition), 2_000).await;
        assert!(matches!(refused, Err(Error::PreconditionFailed)), "{refused:?}");
        assert_eq!(test.chunk_rows(upload.id()).await, 0, "the refused upload's chunks are gone");
        assert_eq!(store.upload_state(upload.id()).await.unwrap(), Some(UploadState::Aborted));
        assert_eq!(store.head(&acme(), &path("a.txt")).await.unwrap(), Some(existing.clone()));
    }
    // If-Match on a path that holds nothing creates nothing, not even a tombstone.
    let upload = stage(&store, &acme(), &path("b.txt"), &data, 2_000).await;
    let refused = store.commit(&upload, blob_commit(&data, BlobCondition::Exists), 2_000).await;
    assert!(matches!(refused, Err(Error::PreconditionFailed)));
    assert_eq!(store.read(&acme(), &path("b.txt")).await.unwrap(), BlobRead::Absent);
    assert_eq!(test.chunk_rows(upload.id()).await, 0);
    // Only the existing blob's chunk is left on the shard.
    assert_eq!(test.rows("blob_chunks", None).await, 1);
    test.drop_db().await;
}

async fn abort_and_protocol_errors_leave_no_chunks(test: TestDb) {
    let shard = shard();
    let store = BlobStore::new(&test.db, &shard).routed_at(0);
    let data = bytes(2 * CHUNK, 6);
    let upload = stage(&store, &acme(), &path("big.iso"), &data, 1_000).await;
    assert_eq!(test.chunk_rows(upload.id()).await, 2);
    store.abort(&upload, 1_500).await.unwrap();
    assert_eq!(test.chunk_rows(upload.id()).await, 0);
    assert_eq!(store.upload_state(upload.id()).await.unwrap(), Some(UploadState::Aborted));
    store.abort(&upload, 1_600).await.expect("aborting twice is harmless");
    assert!(matches!(store.put_chunk(&upload, 2, b"late", 1_700).await, Err(Error::UploadClosed)));
    assert!(matches!(
        store.commit(&upload, blob_commit(&data, BlobCondition::Always), 1_700).await,
        Err(Error::UploadClosed)
    ));
    assert_eq!(store.head(&acme(), &path("big.iso")).await.unwrap(), None);

    // Chunks only append, in order, and only the last may be short.
    let upload = store.begin_upload(&acme(), &path("big.iso"), 7, 2_000).await.unwrap();
    assert!(matches!(store.put_chunk(&upload, 1, &data[..CHUNK], 2_000).await, Err(Error::BlobProtocol(_))));
    assert!(matches!(store.put_chunk(&upload, 0, &[], 2_000).await, Err(Error::BlobProtocol(_))));
    assert!(matches!(store.put_chunk(&upload, 0, &vec![0; CHUNK + 1], 2_000).await, Err(Error::BlobProtocol(_))));
    store.put_chunk(&upload, 0, &data[..100], 2_000).await.unwrap();
    assert!(matches!(store.put_chunk(&upload, 1, &data[..100], 2_000).await, Err(Error::BlobProtocol(_))));
    assert!(matches!(store.put_chunk(&upload, 0, &data[..100], 2_000).await, Err(Error::BlobProtocol(_))));
    // A commit whose totals disagree with what arrived is refused and discards the upload.
    let refused = store.commit(&upload, blob_commit(&data[..101], BlobCondition::Always), 2_000).await;
    assert!(matches!(refused, Err(Error::BlobProtocol(_))), "{refused:?}");
    assert_eq!(test.chunk_rows(upload.id()).await, 0);
    assert_eq!(store.upload_state(upload.id()).await.unwrap(), Some(UploadState::Aborted));
    // As does a malformed SHA-256.
    let upload = stage(&store, &acme(), &path("big.iso"), b"x", 3_000).await;
    let commit = BlobCommit {
        size: 1,
        sha256_hex: "not-hex".into(),
        content_type: "text/plain".into(),
        chunk_count: 1,
        condition: BlobCondition::Always,
    };
    assert!(matches!(store.commit(&upload, commit, 3_000).await, Err(Error::BlobProtocol(_))));
    assert_eq!(test.rows("blob_chunks", None).await, 0);
    assert_eq!(test.rows("blobs", None).await, 0);
    test.drop_db().await;
}

async fn one_winner_per_if_match(test: TestDb) {
    let shard = Arc::new(shard());
    let store = BlobStore::new(&test.db, &shard).routed_at(0);
    let first = write(&store, "shared.bin", &bytes(CHUNK + 1, 7), BlobCondition::Absent, 1).await.unwrap().blob;
    let mut tasks = Vec::new();
    for w in 0..6u64 {
        let (db, shard, etag) = (test.db.clone(), shard.clone(), first.sha256.clone());
        tasks.push(tokio::spawn(async move {
            let store = BlobStore::new(&db, &shard).routed_at(0);
            let data = bytes(CHUNK + 10 + w as usize, 100 + w);
            let upload = stage(&store, &acme(), &path("shared.bin"), &data, 2).await;
            let result = store.commit(&upload, blob_commit(&data, BlobCondition::Sha256In(vec![etag])), 3).await;
            (upload, data, result)
        }));
    }
    let mut winners = Vec::new();
    for task in tasks {
        let (upload, data, result) = task.await.unwrap();
        match result {
            Ok(outcome) => winners.push((outcome.blob, data)),
            Err(Error::PreconditionFailed) => {
                assert_eq!(test.chunk_rows(upload.id()).await, 0, "a losing upload leaves no chunks");
            }
            Err(e) => panic!("unexpected error {e}"),
        }
    }
    assert_eq!(winners.len(), 1, "exactly one conditional writer wins");
    let (won, data) = winners.pop().unwrap();
    assert_eq!(won.version, 2);
    let head = store.head(&acme(), &path("shared.bin")).await.unwrap().unwrap();
    assert_eq!(head, won);
    assert!(read_all(&store, &head).await.unwrap() == data);
    assert_eq!(test.rows("blob_chunks", None).await, 4, "the winner's 2 chunks and the superseded 2");
    test.drop_db().await;
}

async fn delete_leaves_a_tombstone(test: TestDb) {
    let shard = shard();
    let store = BlobStore::new(&test.db, &shard).routed_at(0);
    write(&store, "notes.txt", b"v1", BlobCondition::Absent, 1_000).await.unwrap();
    let v2 = write(&store, "notes.txt", b"v2", BlobCondition::Always, 2_000).await.unwrap().blob;
    let (tenant, at) = (acme(), path("notes.txt"));

    let wrong = BlobCondition::Sha256In(vec![sha_hex(b"v1")]);
    assert!(matches!(store.delete(&tenant, &at, &wrong, 3_000).await, Err(Error::PreconditionFailed)));
    let deleted = store.delete(&tenant, &at, &BlobCondition::Sha256In(vec![v2.sha256.clone()]), 3_000).await.unwrap();
    assert_eq!(deleted, Some(v2.clone()), "returns the blob as it was");
    assert_eq!(store.head(&tenant, &at).await.unwrap(), None);
    assert_eq!(store.read(&tenant, &at).await.unwrap(), BlobRead::Gone(3));
    assert_eq!(store.upload_state(&v2.upload_id).await.unwrap(), Some(UploadState::Superseded));
    assert!(read_all(&store, &v2).await.unwrap() == b"v2", "readers of the deleted blob finish");

    assert_eq!(store.delete(&tenant, &at, &BlobCondition::Always, 4_000).await.unwrap(), None);
    assert_eq!(store.delete(&tenant, &at, &BlobCondition::Absent, 4_000).await.unwrap(), None);
    assert!(matches!(store.delete(&tenant, &at, &BlobCondition::Exists, 4_000).await, Err(Error::PreconditionFailed)));
    assert_eq!(store.read(&tenant, &at).await.unwrap(), BlobRead::Gone(3), "no-op deletes change nothing");

    // Re-creating continues the version sequence and starts a new incarnation.
    let again = write(&store, "notes.txt", b"v4", BlobCondition::Absent, 5_000).await.unwrap();
    assert!(again.created);
    assert_eq!((again.blob.version, again.blob.created_at_ms), (4, 5_000));
    assert_eq!(store.head(&tenant, &at).await.unwrap(), Some(again.blob));
    test.drop_db().await;
}

async fn list_in_byte_order_with_prefix_and_cursor(test: TestDb) {
    let shard = shard();
    let store = BlobStore::new(&test.db, &shard).routed_at(0);
    for p in ["a/2", "a/ü", "a", "b/1", "a/Z", "a/1", "a/a", "a/gone", "ab"] {
        write(&store, p, p.as_bytes(), BlobCondition::Absent, 1).await.unwrap();
    }
    store.delete(&acme(), &path("a/gone"), &BlobCondition::Always, 2).await.unwrap();
    let other = TenantId::parse("other").unwrap();
    let upload = stage(&store, &other, &path("a/0"), b"theirs", 1).await;
    store.commit(&upload, blob_commit(b"theirs", BlobCondition::Absent), 1).await.unwrap();

    let paths = |blobs: Vec<BlobMeta>| blobs.into_iter().map(|b| b.path.to_string()).collect::<Vec<_>>();
    let all = store.list(&acme(), None, None, 100).await.unwrap();
    assert_eq!(paths(all), ["a", "a/1", "a/2", "a/Z", "a/a", "a/ü", "ab", "b/1"], "byte order, no tombstones");
    let page = store.list(&acme(), Some("a/"), None, 3).await.unwrap();
    assert_eq!(paths(page), ["a/1", "a/2", "a/Z"]);
    let page = store.list(&acme(), Some("a/"), Some("a/Z"), 3).await.unwrap();
    assert_eq!(paths(page), ["a/a", "a/ü"]);
    let page = store.list(&acme(), Some("a/"), Some("a/ü"), 3).await.unwrap();
    assert!(page.is_empty());
    let listed = store.list(&acme(), Some("b/"), None, 10).await.unwrap();
    assert_eq!(listed[0].sha256, sha_hex(b"b/1"));
    assert_eq!(paths(store.list(&other, Some("a/"), None, 10).await.unwrap()), ["a/0"]);
    test.drop_db().await;
}

async fn garbage_goes_only_after_the_grace(test: TestDb) {
    let shard = shard();
    let store = BlobStore::new(&test.db, &shard).routed_at(0);
    let (tenant, at) = (acme(), path("report.pdf"));
    let v1_data = bytes(2 * CHUNK + 1, 8);
    let v1 = write(&store, "report.pdf", &v1_data, BlobCondition::Absent, 1_000).await.unwrap().blob;
    let v2 = write(&store, "report.pdf", b"v2", BlobCondition::Always, 2_000).await.unwrap().blob; // v1 superseded at 2000
    let aborted = stage(&store, &tenant, &at, b"aborted", 2_500).await;
    store.abort(&aborted, 2_500).await.unwrap();
    let stale = stage(&store, &tenant, &at, b"stale", 2_200).await; // last chunk at 2200
    let fresh = stage(&store, &tenant, &at, b"fresh", 5_000).await;

    assert_eq!(store.collect_garbage(1_500).await.unwrap(), 0, "nothing is older than the cut-off");
    assert!(read_all(&store, &v1).await.unwrap() == v1_data, "the superseded blob is readable within the grace");
    assert_eq!(store.upload_state(stale.id()).await.unwrap(), Some(UploadState::Staging));

    assert_eq!(store.collect_garbage(3_000).await.unwrap(), 3 + 1, "v1's chunks and the stale upload's");
    assert_eq!(test.chunk_rows(&v1.upload_id).await, 0);
    assert!(matches!(store.read_chunk(&v1, 0).await, Err(Error::BlobNotFound)));
    assert_eq!(store.upload_state(&v1.upload_id).await.unwrap(), None);
    assert_eq!(store.upload_state(aborted.id()).await.unwrap(), None);
    assert_eq!(store.upload_state(stale.id()).await.unwrap(), None);
    assert!(matches!(store.put_chunk(&stale, 1, b"late", 6_000).await, Err(Error::UploadClosed)));
    assert!(matches!(
        store.commit(&stale, blob_commit(b"stale", BlobCondition::Always), 6_000).await,
        Err(Error::UploadClosed)
    ));

    // The live blob and the upload still receiving chunks are untouched.
    assert_eq!(store.upload_state(&v2.upload_id).await.unwrap(), Some(UploadState::Live));
    assert!(read_all(&store, &v2).await.unwrap() == b"v2");
    assert_eq!(store.upload_state(fresh.id()).await.unwrap(), Some(UploadState::Staging));
    assert_eq!(test.rows("blob_chunks", None).await, 2);
    let fresh_blob = store.commit(&fresh, blob_commit(b"fresh", BlobCondition::Always), 6_000).await.unwrap().blob;
    assert_eq!(fresh_blob.version, 3);
    assert_eq!(store.collect_garbage(i64::MAX).await.unwrap(), 1, "v2, superseded by the fresh upload");
    assert!(read_all(&store, &fresh_blob).await.unwrap() == b"fresh");
    test.drop_db().await;
}

async fn fence_refuses_writes_on_an_old_map(test: TestDb) {
    let shard = shard();
    let (tenant, at) = (acme(), path("fenced.bin"));
    let before =
        write(&BlobStore::new(&test.db, &shard), "fenced.bin", b"before", BlobCondition::Absent, 1).await.unwrap().blob;
    RecordStore::new(&test.db, &shard).raise_fence(5).await.unwrap();
    let stale = BlobStore::new(&test.db, &shard).routed_at(4);
    let current = BlobStore::new(&test.db, &shard).routed_at(5);

    assert!(matches!(stale.begin_upload(&tenant, &at, 7, 2).await, Err(Error::StaleMap(_))));
    assert!(matches!(stale.delete(&tenant, &at, &BlobCondition::Always, 2).await, Err(Error::StaleMap(_))));

    // The fence rises while an upload is under way: its next chunk and its commit are refused,
    // and the refused commit leaves nothing behind.
    let upload = stage(&current, &tenant, &at, b"after", 3).await;
    RecordStore::new(&test.db, &shard).raise_fence(6).await.unwrap();
    assert!(matches!(current.put_chunk(&upload, 1, b"more", 4).await, Err(Error::StaleMap(_))));
    let refused = current.commit(&upload, blob_commit(b"after", BlobCondition::Always), 4).await;
    assert!(matches!(refused, Err(Error::StaleMap(_))), "{refused:?}");
    assert_eq!(test.chunk_rows(upload.id()).await, 0);
    assert_eq!(current.head(&tenant, &at).await.unwrap(), Some(before));

    let fresh = BlobStore::new(&test.db, &shard).routed_at(6);
    write(&fresh, "fenced.bin", b"after", BlobCondition::Always, 5).await.unwrap();
    assert!(fresh.delete(&tenant, &at, &BlobCondition::Always, 6).await.unwrap().is_some());
    test.drop_db().await;
}

async fn purge_removes_only_the_tenant(test: TestDb) {
    let shard = shard();
    let store = BlobStore::new(&test.db, &shard);
    let other = TenantId::parse("other").unwrap();
    write(&store, "one", &bytes(CHUNK + 1, 9), BlobCondition::Always, 1).await.unwrap();
    write(&store, "one", b"replaced", BlobCondition::Always, 2).await.unwrap();
    write(&store, "two", b"deleted", BlobCondition::Always, 2).await.unwrap();
    store.delete(&acme(), &path("two"), &BlobCondition::Always, 3).await.unwrap();
    stage(&store, &acme(), &path("three"), b"staging", 3).await;
    let upload = stage(&store, &other, &path("one"), b"theirs", 1).await;
    let theirs = store.commit(&upload, blob_commit(b"theirs", BlobCondition::Always), 1).await.unwrap().blob;

    assert_eq!(store.purge_tenant(&acme()).await.unwrap(), 2, "a blob and a tombstone");
    for table in ["blobs", "blob_uploads"] {
        assert_eq!(test.rows(table, Some(&acme())).await, 0, "{table}");
    }
    assert_eq!(test.rows("blob_chunks", None).await, 1, "only the other tenant's chunk is left");
    assert_eq!(store.head(&other, &path("one")).await.unwrap(), Some(theirs.clone()));
    assert!(read_all(&store, &theirs).await.unwrap() == b"theirs");
    test.drop_db().await;
}

/// Deleting a tenant through the router takes its blobs along, so a tenant created later under
/// the same id starts empty (the purge itself runs on both engines above).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_tenant_deletes_its_blobs() {
    let dir = tempfile::tempdir().unwrap();
    let router = ShardRouter::open(&StorageConfig::default(), dir.path()).await.unwrap();
    let audit = |action| Audit {
        actor: "test".into(),
        tenant: Some("acme".into()),
        action,
        target: "tenant:acme".into(),
        request_id: "r".into(),
        client_request_id: None,
        client_address: None,
    };
    let topology = Topology::of(&router);
    topology.create_tenant(acme(), "Acme".into(), Tier::Standard, None, None, &audit("tenant.create")).await.unwrap();
    let route = router.route_tenant(&acme()).unwrap();
    let db = router.shard_db(&route.shard).unwrap();
    let store = BlobStore::new(&db, &route.shard).routed_at(route.epoch);
    let upload = store.begin_upload(&acme(), &path("kept?"), route.vshard, 1).await.unwrap();
    store.put_chunk(&upload, 0, b"secret", 1).await.unwrap();
    store.commit(&upload, blob_commit(b"secret", BlobCondition::Absent), 1).await.unwrap();

    topology.delete_tenant(&acme(), &audit("tenant.delete")).await.unwrap();
    topology
        .create_tenant(acme(), "Acme again".into(), Tier::Standard, None, None, &audit("tenant.create"))
        .await
        .unwrap();
    let route = router.route_tenant(&acme()).unwrap();
    let db = router.shard_db(&route.shard).unwrap();
    let store = BlobStore::new(&db, &route.shard);
    assert_eq!(store.read(&acme(), &path("kept?")).await.unwrap(), BlobRead::Absent);
    let chunks: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM blob_chunks").fetch_one(&db.pool).await.unwrap();
    assert_eq!(chunks, 0);
}

shardgate_shard_router::on_both_engines!(
    sqlite: TestDb::sqlite(),
    postgres: TestDb::postgres("sg_blobs");
    multi_chunk_round_trip,
    windows_read_consecutive_chunks_in_one_statement,
    overwrite_is_atomic,
    readers_never_see_a_mix,
    failed_precondition_leaves_nothing_staged,
    abort_and_protocol_errors_leave_no_chunks,
    one_winner_per_if_match,
    delete_leaves_a_tombstone,
    list_in_byte_order_with_prefix_and_cursor,
    garbage_goes_only_after_the_grace,
    fence_refuses_writes_on_an_old_map,
    purge_removes_only_the_tenant,
);
