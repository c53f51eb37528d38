//! A reader in another process: [`Store::open_reader`] and [`Reader::refresh`].
//!
//! The reader takes no lock of the store's and heals nothing. It holds a pin (`readers.rs`),
//! reads the manifest's trusted prefix as boot would (the same `Catalog::apply`, stopping at
//! the first frame that fails its check or that the catalog refuses: a torn last frame is simply
//! not visible yet), and follows it: a refresh reads only the bytes appended since, or, after a
//! rewrite, the new generation whole (a snapshot of the live state, not the history).

use std::collections::VecDeque;
use std::io;
use std::path::Path;
use std::sync::Arc;

use strata_index::{
    Catalog, LOG_HEADER_LEN, WrittenWhole, check_header, decode_frame_in, scan_frames,
    written_whole,
};
use strata_recover::RecoverError;
use strata_segment::SegmentError;
use strata_segment::manifest_generations;
use strata_segment::names::manifest_name;
use strata_segment::vfs::{Counting, Vfs};

use crate::config::Config;
use crate::error::EngineError;
use crate::reader::Reader;
use crate::readers::{Follow, ManifestPosition, ReaderPin};
use crate::store::Store;

/// How many times a refresh looks again when the manifest it listed went before it was read
/// (a rewrite replaced it meanwhile): each look finds the newer generation.
const LOOKS_MAX: usize = 8;

impl Store {
    /// Opens the store in folder `dir` to read beside a writer that may be running in another
    /// process: no lock is taken (a writer opens and goes on as if this reader were not there),
    /// nothing is healed, and the reader answers from the manifest's trusted prefix as it was
    /// when read, until [`Reader::refresh`] follows what the writer has made durable since.
    /// [`View::manifest_position`](crate::View::manifest_position) and the watermarks say what it
    /// answers at.
    ///
    /// The reader holds a pin, a file in the store's `readers/` held under `flock`, which keeps
    /// the writer from removing a retired file the reader may still open; it is removed when
    /// the store is dropped, and a writer or reader removes it if this process dies. Refused
    /// (`TooManyReaders`) when `Config::reader_processes_max` readers are open already, and on a
    /// read-only mount (the pin cannot be created: use [`Store::open_read_only`] there, as no
    /// writer can run on it). The answer is a [`Reader`], which has no write method.
    pub fn open_reader(dir: impl AsRef<Path>, config: Config) -> Result<Reader, EngineError> {
        let dir = dir.as_ref();
        let vfs = crate::store::open_folder(dir)?;
        Store::open_reader_in(Arc::new(vfs), config)
    }

    /// [`Store::open_reader`] on any file system (the simulated one, in tests).
    pub fn open_reader_in(vfs: Arc<dyn Vfs>, config: Config) -> Result<Reader, EngineError> {
        config.validate()?;
        // A folder that holds no manifest is no store: refused before anything is created in it.
        let generations = manifest_generations(vfs.as_ref()).map_err(EngineError::read)?;
        if generations.is_empty() {
            return Err(EngineError::Open(RecoverError::NotAStore {
                reason: format!("{} holds no manifest-NNNNNN", vfs.location()),
            }));
        }
        // The pin first, at the start of history: from here on the writer removes nothing this
        // reader may find in the manifest it is about to read.
        let pin = ReaderPin::take(Arc::clone(&vfs), config.reader_processes_max)?;
        Reader::following(vfs, config, Some(pin))
    }

    /// A reader of a store on a file system no writer removes files from while they may be
    /// read, so it holds no pin: a replica's copy of a bucket (strata-remote), whose publisher
    /// keeps every object a state it published names until a newer reset collects it. It
    /// follows the manifest as [`Store::open_reader`]'s reader does ([`Reader::refresh`]), and
    /// writes nothing (a [`Reader`] has no write method). The file system may refuse every
    /// write too.
    pub fn open_follower_in(vfs: Arc<dyn Vfs>, config: Config) -> Result<Reader, EngineError> {
        config.validate()?;
        let generations = manifest_generations(vfs.as_ref()).map_err(EngineError::read)?;
        if generations.is_empty() {
            return Err(EngineError::Open(RecoverError::NotAStore {
                reason: format!("{} holds no manifest-NNNNNN", vfs.location()),
            }));
        }
        Reader::following(vfs, config, None)
    }
}

impl Reader {
    /// A reader's store over what boot's look finds now, its pin (if any) moved to it.
    fn following(
        vfs: Arc<dyn Vfs>,
        config: Config,
        mut pin: Option<ReaderPin>,
    ) -> Result<Reader, EngineError> {
        // Boot's own look, changing nothing: the trusted prefix as boot would trust it, and a
        // store boot would refuse (damage inside the history, a stray generation) refused
        // alike. Beside a running writer some of what it finds is only a write in flight (a
        // frame half appended, a segment renamed and not yet claimed), which reads never see.
        let plan = inspect_beside_a_writer(vfs.as_ref())?;
        let mut report = plan.report;
        report.heal_pending = !report.findings.is_empty();
        let at = ManifestPosition {
            generation: report.generation,
            len: report.trusted_len,
        };
        let log_version = plan.log_version;
        if let Some(pin) = pin.as_mut() {
            pin.move_to(at)?;
        }
        let mut store = Reader::reading(Arc::new(Counting::new(vfs)), config, plan.catalog, report);
        store.view.unreadable = Arc::new(plan.unreadable);
        store.follow = Some(Follow {
            pin,
            log_version,
            versions: VecDeque::from([(store.view.version, at)]),
        });
        Ok(store)
    }

    /// Follows what the writer has made durable since this reader last read the manifest (a
    /// reader's store, [`Store::open_reader`]): the frames appended since, or a rewritten
    /// generation. Answers whether anything changed. Reads answer at the new state from here
    /// on; a [`Snapshot`](crate::Snapshot) taken before keeps its own (and holds the files it
    /// may read on disk while it lives). Costs one listing of the store's root and one read of
    /// what was appended. Refused (`ReadOnly`) on a store that is not a reader.
    pub fn refresh(&mut self) -> Result<bool, EngineError> {
        let Some(follow) = self.follow.as_ref() else {
            return Err(EngineError::ReadOnly {
                store: self.vfs.location(),
                operation: "refresh",
            });
        };
        let at = self.manifest_position();
        let log_version = follow.log_version;
        let (catalog, log_version, now) = match read_since(self.vfs.as_ref(), at)? {
            // Nothing new: nothing copied, nothing applied.
            Read::Appended { bytes } if bytes.is_empty() => (None, log_version, at),
            Read::Appended { bytes } => {
                let applied = self.apply_appended(&bytes, at, log_version)?;
                let now = ManifestPosition {
                    generation: at.generation,
                    len: at.len + applied,
                };
                (None, log_version, now)
            }
            Read::Whole(loaded) => (Some(loaded.catalog), loaded.log_version, loaded.at),
        };
        let changed = now != at;
        if changed {
            if let Some(catalog) = catalog {
                self.view.catalog = Arc::new(catalog);
            }
            self.view.version += 1;
            self.view.evict_readers_gone();
            self.view.seen = now;
        }
        // The pin says the oldest position anything here may still read at: the oldest
        // snapshot's, or now.
        let oldest_held = self.pins.oldest();
        let version = self.version;
        let Some(follow) = self.follow.as_mut() else {
            return Ok(changed);
        };
        follow.log_version = log_version;
        if changed {
            follow.versions.push_back((version, now));
        }
        while follow.versions.len() > 1
            && follow
                .versions
                .get(1)
                .is_some_and(|&(v, _)| oldest_held.is_none_or(|oldest| oldest >= v))
        {
            follow.versions.pop_front();
        }
        let pinned = follow.versions.front().map_or(now, |&(_, at)| at);
        if let Some(pin) = follow.pin.as_mut() {
            pin.move_to(pinned)?;
        }
        Ok(changed)
    }

    /// Applies the frames `bytes` appended past `at` to the catalog, answering how many bytes of
    /// them it applied; what lies past them is a write in flight, or damage, refused
    /// ([`refuse_damage`]) with the store as it was. Applied in place when nothing else holds
    /// the catalog (no view handed out holds this version): a follow then costs what was
    /// appended, not a copy of the whole catalog and the drop of the old one (a replica's poll
    /// of a bucket of 1,000 files went from a fifth of a boot's cost to a few hundredths, #49).
    /// A record the catalog refuses midway is rare (its frame passed its checksum): the
    /// catalog is then read again from the manifest up to `at`.
    fn apply_appended(
        &mut self,
        bytes: &[u8],
        at: ManifestPosition,
        log_version: u32,
    ) -> Result<u64, EngineError> {
        // Frames that fail their check, with whole frames after them, are refused before
        // anything is applied.
        let decoded = decoded_len(bytes, log_version);
        refuse_damage(bytes, decoded, at, false)?;
        let Some(catalog) = Arc::get_mut(&mut self.view.catalog) else {
            // A view holds this version: applied to a copy, which the view never sees.
            let mut catalog = Catalog::clone(&self.view.catalog);
            let applied = apply_frames(bytes, &mut catalog, log_version);
            refuse_damage(bytes, applied, at, false)?;
            if applied > 0 {
                self.view.catalog = Arc::new(catalog);
            }
            return Ok(applied);
        };
        let applied = apply_frames(bytes, catalog, log_version);
        if let Err(refused) = refuse_damage(bytes, applied, at, false) {
            // Back to the catalog as it was at `at`.
            self.view.catalog = Arc::new(catalog_at(self.vfs.as_ref(), at, log_version)?);
            return Err(refused);
        }
        Ok(applied)
    }

    /// Whether the manifest on disk now holds more than this reader has read: a writer in
    /// another process has recorded something since ([`Reader::refresh`] would follow it), so
    /// an answer given here is at an older state than the store's. Always false for a store
    /// that is not a reader. Costs a listing of the root and a `stat`; a manifest that cannot
    /// be looked at answers false (this only decides what to tell a person).
    pub fn behind(&self) -> bool {
        if self.follow.is_none() {
            return false;
        }
        let at = self.seen;
        let Ok(generations) = manifest_generations(self.vfs.as_ref()) else {
            return false;
        };
        match generations.last() {
            Some(&newest) if newest > at.generation => true,
            Some(&newest) => self
                .vfs
                .len(&manifest_name(newest))
                .is_ok_and(|len| len > at.len),
            None => false,
        }
    }

    /// Whether this store is a reader in another process ([`Store::open_reader`]).
    pub fn is_reader(&self) -> bool {
        self.follow.is_some()
    }

    /// Where this reader's pin holds the writer back: its own position, or an older one a
    /// snapshot it handed out still reads at. `None` for a store that is not a reader.
    pub fn pinned_at(&self) -> Option<ManifestPosition> {
        self.follow
            .as_ref()
            .and_then(|follow| follow.pin.as_ref())
            .map(ReaderPin::at)
    }
}

/// Boot's look ([`strata_recover::inspect`]) at a store a writer may be changing: a file it
/// listed and then found gone (a temp renamed, a retired file removed, a generation replaced)
/// is a write that moved on meanwhile, so it looks again.
fn inspect_beside_a_writer(vfs: &dyn Vfs) -> Result<strata_recover::Plan, EngineError> {
    let mut looks = 0;
    loop {
        match strata_recover::inspect(vfs) {
            Err(RecoverError::Storage(SegmentError::Io { source, .. }))
                if source.kind() == io::ErrorKind::NotFound && looks < LOOKS_MAX =>
            {
                looks += 1;
            }
            plan => return plan.map_err(EngineError::Open),
        }
    }
}

/// A catalog read from a whole manifest generation, and where the read ended.
struct Loaded {
    catalog: Catalog,
    at: ManifestPosition,
    log_version: u32,
}

/// What a read of the manifest found.
enum Read {
    /// The bytes appended past the position read from, in the same generation.
    Appended { bytes: Vec<u8> },
    /// A generation read whole: the first read, a rewrite since, or a cut beneath the position.
    Whole(Box<Loaded>),
}

/// Reads the manifest: what was appended past position `from` if the same generation is still
/// the newest and no shorter, else the newest generation whole.
fn read_since(vfs: &dyn Vfs, from: ManifestPosition) -> Result<Read, EngineError> {
    let mut last = None;
    for _ in 0..LOOKS_MAX {
        let generations = manifest_generations(vfs).map_err(EngineError::read)?;
        let Some(&generation) = generations.last() else {
            return Err(EngineError::Open(RecoverError::NotAStore {
                reason: format!("{} holds no manifest-NNNNNN", vfs.location()),
            }));
        };
        let file = manifest_name(generation);
        let read = match from {
            at if at.generation == generation => match vfs.len(&file) {
                // Cut beneath what was read (an operator's repair): read it again whole.
                Ok(len) if len < at.len => read_whole(vfs, generation),
                Ok(_) => vfs
                    .read_from(&file, at.len)
                    .map(|bytes| Ok(Read::Appended { bytes })),
                Err(error) => Err(error),
            },
            _ => read_whole(vfs, generation),
        };
        match read {
            Ok(read) => return read,
            // Replaced by a newer generation between the listing and the read: look again.
            Err(error) if error.kind() == io::ErrorKind::NotFound => last = Some(error),
            Err(error) => {
                return Err(EngineError::read(SegmentError::Io {
                    path: file,
                    source: error,
                }));
            }
        }
    }
    let error = last.unwrap_or_else(|| io::Error::from(io::ErrorKind::NotFound));
    Err(EngineError::read(SegmentError::Io {
        path: String::new(),
        source: error,
    }))
}

/// The trusted prefix of generation `generation`, read whole.
fn read_whole(vfs: &dyn Vfs, generation: u32) -> io::Result<Result<Read, EngineError>> {
    let file = manifest_name(generation);
    let bytes = vfs.read(&file)?;
    let log_version = match check_header(&bytes) {
        Ok(version) => version,
        Err(reason) => {
            return Ok(Err(EngineError::Open(RecoverError::ManifestUnusable {
                file,
                fault: strata_index::Fault { offset: 0, reason },
            })));
        }
    };
    let mut catalog = Catalog::new();
    let frames_bytes = bytes.get(LOG_HEADER_LEN..).unwrap_or_default();
    let applied = apply_frames(frames_bytes, &mut catalog, log_version);
    let start = ManifestPosition {
        generation,
        len: LOG_HEADER_LEN as u64,
    };
    let whole = stops_in_whole_part(frames_bytes, applied, generation, log_version);
    if let Err(error) = refuse_damage(frames_bytes, applied, start, whole) {
        return Ok(Err(error));
    }
    Ok(Ok(Read::Whole(Box::new(Loaded {
        catalog,
        at: ManifestPosition {
            generation,
            len: LOG_HEADER_LEN as u64 + applied,
        },
        log_version,
    }))))
}

/// Applies the whole frames at the start of `bytes` to `catalog`, stopping at the first that
/// fails its check or that the catalog refuses (`apply` changes nothing then), as boot stops:
/// answers the bytes applied.
fn apply_frames(bytes: &[u8], catalog: &mut Catalog, log_version: u32) -> u64 {
    let mut pos = 0;
    while let Some(rest) = bytes.get(pos..).filter(|rest| !rest.is_empty()) {
        let Ok((record, consumed)) = decode_frame_in(rest, log_version) else {
            break;
        };
        if catalog.apply(&record).is_err() {
            break;
        }
        pos += consumed;
    }
    pos as u64
}

/// How many bytes of `bytes` are whole frames that pass their check, from the start.
fn decoded_len(bytes: &[u8], log_version: u32) -> u64 {
    let mut pos = 0;
    while let Some(rest) = bytes.get(pos..).filter(|rest| !rest.is_empty()) {
        let Ok((_, consumed)) = decode_frame_in(rest, log_version) else {
            break;
        };
        pos += consumed;
    }
    pos as u64
}

/// The catalog of generation `at.generation` up to `at.len`, read again from the manifest: a
/// position this store read before, so every frame beneath it applies.
fn catalog_at(
    vfs: &dyn Vfs,
    at: ManifestPosition,
    log_version: u32,
) -> Result<Catalog, EngineError> {
    let file = manifest_name(at.generation);
    let bytes = vfs.read(&file).map_err(|source| {
        EngineError::read(SegmentError::Io {
            path: file.clone(),
            source,
        })
    })?;
    let frames = usize::try_from(at.len)
        .ok()
        .and_then(|end| bytes.get(LOG_HEADER_LEN..end))
        .unwrap_or_default();
    let mut catalog = Catalog::new();
    let applied = apply_frames(frames, &mut catalog, log_version);
    if applied != frames.len() as u64 {
        return Err(EngineError::Unreadable {
            source: SegmentError::Malformed {
                path: file,
                offset: LOG_HEADER_LEN as u64 + applied,
                what: "read again, the manifest no longer replays up to where this reader had \
                       read it"
                    .to_owned(),
            },
        });
    }
    Ok(catalog)
}

/// Refuses what lies past the frames applied when it is damage, not a write in flight: an
/// append leaves at most one frame half written at the end, so a whole frame after the one
/// that stopped the apply is damage to acknowledged history. Boot refuses that store (and
/// `engine-fsck repair` is the way on), and so does the reader, rather than answer short.
///
/// `in_whole_part` says the apply stopped inside the part of the generation written whole
/// before it was named (`strata_index::generation`): no write is in flight there, so whatever
/// stopped it is damage even with nothing after it.
fn refuse_damage(
    bytes: &[u8],
    applied: u64,
    at: ManifestPosition,
    in_whole_part: bool,
) -> Result<(), EngineError> {
    let what = if in_whole_part {
        "the part of the generation written whole before it was named stops here (a frame fails \
         its check, or the file ends): damage, not a write in flight (engine-fsck repair says the \
         way back)"
    } else if applied >= bytes.len() as u64 || scan_frames(bytes, applied + 1).is_empty() {
        return Ok(());
    } else {
        "a frame fails its check and whole frames follow it: damage to the history, not a write \
         in flight (engine-fsck repair says what a cut would lose)"
    };
    Err(EngineError::Unreadable {
        source: SegmentError::Malformed {
            path: manifest_name(at.generation),
            offset: at.len + applied,
            what: what.to_owned(),
        },
    })
}

/// Whether `applied` bytes of frames (of generation `generation`'s `frames`, the bytes after its
/// header) stop short of the part of it written whole, as boot judges it (`strata_recover`).
fn stops_in_whole_part(frames: &[u8], applied: u64, generation: u32, log_version: u32) -> bool {
    let first = (applied > 0)
        .then(|| decode_frame_in(frames, log_version).ok())
        .flatten()
        .map(|(record, _)| record);
    match written_whole(generation, log_version, first.as_ref()) {
        WrittenWhole::Header => false,
        WrittenWhole::FirstFrame => applied == 0,
        WrittenWhole::Through(end) => (LOG_HEADER_LEN as u64).saturating_add(applied) < end,
        WrittenWhole::PreambleLost => true,
    }
}
