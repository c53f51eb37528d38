//! Tests of the I/O seam.
//!
//! - `behaviour`: one suite of the `Vfs` contract, run unchanged against `RealFs` (in a temporary
//!   directory) and `SimFs`, so the simulation cannot drift from the disk on the cases written
//!   down here; `sim_agrees_with_real` then drives both with generated operation sequences and
//!   compares every answer and every error kind.
//! - `crash`: what `SimFs` keeps and loses across a crash, its torn writes, its injected faults
//!   and its operation counter.
//! - `laws`: properties of the crash model over generated workloads.

use std::io;

use tempfile::TempDir;

use super::{DirEntry, Fault, RealFs, SimFs, Vfs, VfsFile};

/// One store under test and a way to open a second, independent handle on the same store.
struct Store {
    fs: Box<dyn Vfs>,
    reopen: Box<dyn Fn() -> Box<dyn Vfs>>,
    /// Keeps the real store's directory alive for the test.
    _dir: Option<TempDir>,
}

fn real_store() -> Store {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_owned();
    Store {
        fs: Box::new(RealFs::open(&root).unwrap()),
        reopen: Box::new(move || Box::new(RealFs::open(&root).unwrap())),
        _dir: Some(dir),
    }
}

fn sim_store() -> Store {
    let fs = SimFs::new();
    let twin = fs.clone();
    Store {
        fs: Box::new(fs),
        reopen: Box::new(move || Box::new(twin.clone())),
        _dir: None,
    }
}

fn write_file(fs: &dyn Vfs, path: &str, bytes: &[u8]) {
    let mut file = fs.create(path).unwrap();
    file.write_all(bytes).unwrap();
}

fn read(fs: &dyn Vfs, path: &str) -> Vec<u8> {
    fs.map(path).unwrap().to_vec()
}

fn err_kind<T: std::fmt::Debug>(result: io::Result<T>) -> io::ErrorKind {
    result.unwrap_err().kind()
}

fn entry(name: &str, is_dir: bool) -> DirEntry {
    DirEntry {
        name: name.to_owned(),
        is_dir,
    }
}

/// Runs each named case of `behaviour` once against `RealFs` and once against `SimFs`.
macro_rules! behaviour_suite {
    ($($case:ident),* $(,)?) => {
        mod real {
            $(
                #[test]
                fn $case() {
                    super::behaviour::$case(&super::real_store());
                }
            )*
        }
        mod sim {
            $(
                #[test]
                fn $case() {
                    super::behaviour::$case(&super::sim_store());
                }
            )*
        }
    };
}

behaviour_suite!(
    create_write_map_round_trip,
    create_refuses_an_existing_name,
    rename_never_replaces,
    rename_moves_between_directories,
    rename_refuses_a_directory_beneath_itself,
    list_is_sorted_and_marks_directories,
    remove_unlinks_a_file_only,
    set_len_cuts_and_extends,
    open_append_appends,
    zero_length_file_maps_empty,
    map_is_a_view_of_the_file_as_it_was,
    handles_follow_the_file_not_the_name,
    create_dir_is_idempotent_for_directories_only,
    wrong_kind_of_entry_is_refused,
    bad_paths_are_refused,
    root_is_a_directory_not_a_file,
    syncs_succeed_on_what_exists,
    lock_is_exclusive_until_dropped,
    shared_locks_coexist_and_exclude_the_exclusive_one,
    a_hold_lives_with_its_guard_and_follows_renames,
    read_from_reads_what_lies_past_an_offset,
);

mod behaviour {
    use std::io::ErrorKind;

    use super::{Store, entry, err_kind, read, write_file};

    pub(super) fn create_write_map_round_trip(store: &Store) {
        let fs = &*store.fs;
        fs.create_dir("tmp").unwrap();
        let mut file = fs.create("tmp/000000000007.seg").unwrap();
        file.write_all(b"hello ").unwrap();
        file.write_all(b"").unwrap();
        file.write_all(b"world").unwrap();
        file.sync_data().unwrap();
        assert_eq!(file.len().unwrap(), 11);
        assert_eq!(fs.len("tmp/000000000007.seg").unwrap(), 11);
        assert_eq!(&*fs.map("tmp/000000000007.seg").unwrap(), b"hello world");
        assert!(fs.exists("tmp/000000000007.seg").unwrap());
        assert!(fs.exists("tmp").unwrap());
        assert!(!fs.exists("tmp/000000000008.seg").unwrap());
        assert!(!fs.exists("seg").unwrap());
    }

    pub(super) fn create_refuses_an_existing_name(store: &Store) {
        let fs = &*store.fs;
        write_file(fs, "a", b"first");
        assert_eq!(err_kind(fs.create("a")), ErrorKind::AlreadyExists);
        assert_eq!(
            read(fs, "a"),
            b"first",
            "a refused create must not truncate"
        );
        fs.create_dir("d").unwrap();
        assert_eq!(err_kind(fs.create("d")), ErrorKind::AlreadyExists);
        assert_eq!(err_kind(fs.create("missing/a")), ErrorKind::NotFound);
    }

    pub(super) fn rename_never_replaces(store: &Store) {
        let fs = &*store.fs;
        write_file(fs, "a", b"AAA");
        write_file(fs, "b", b"BB");
        assert_eq!(
            err_kind(fs.rename_noreplace("a", "b")),
            ErrorKind::AlreadyExists
        );
        assert_eq!(
            err_kind(fs.rename_noreplace("a", "a")),
            ErrorKind::AlreadyExists
        );
        assert_eq!(read(fs, "a"), b"AAA");
        assert_eq!(read(fs, "b"), b"BB");
        fs.rename_noreplace("a", "c").unwrap();
        assert!(!fs.exists("a").unwrap());
        assert_eq!(read(fs, "c"), b"AAA");
        assert_eq!(err_kind(fs.rename_noreplace("a", "d")), ErrorKind::NotFound);
    }

    pub(super) fn rename_moves_between_directories(store: &Store) {
        let fs = &*store.fs;
        fs.create_dir("tmp").unwrap();
        fs.create_dir("seg").unwrap();
        write_file(fs, "tmp/1.seg", b"segment");
        fs.rename_noreplace("tmp/1.seg", "seg/1.seg").unwrap();
        assert!(fs.list("tmp").unwrap().is_empty());
        assert_eq!(read(fs, "seg/1.seg"), b"segment");
        assert_eq!(
            err_kind(fs.rename_noreplace("seg/1.seg", "nowhere/1.seg")),
            ErrorKind::NotFound
        );
        // A whole directory moves with its contents.
        fs.rename_noreplace("seg", "old").unwrap();
        assert_eq!(read(fs, "old/1.seg"), b"segment");
    }

    pub(super) fn rename_refuses_a_directory_beneath_itself(store: &Store) {
        let fs = &*store.fs;
        fs.create_dir("a").unwrap();
        fs.create_dir("a/b").unwrap();
        assert_eq!(
            err_kind(fs.rename_noreplace("a", "a/c")),
            ErrorKind::InvalidInput
        );
        assert_eq!(
            err_kind(fs.rename_noreplace("a", "a/b/c")),
            ErrorKind::InvalidInput
        );
        // A sibling whose name merely starts with the same letters is not beneath it.
        fs.create_dir("ab").unwrap();
        fs.rename_noreplace("a", "ab/a").unwrap();
        assert!(fs.exists("ab/a/b").unwrap());
    }

    pub(super) fn list_is_sorted_and_marks_directories(store: &Store) {
        let fs = &*store.fs;
        for name in ["manifest-000002", "b", "LOCKED", "a", "manifest-000001"] {
            write_file(fs, name, b"");
        }
        fs.create_dir("seg").unwrap();
        fs.create_dir("quarantine").unwrap();
        write_file(fs, "seg/000000000002.seg", b"2");
        write_file(fs, "seg/000000000001.seg", b"1");
        assert_eq!(
            fs.list("").unwrap(),
            vec![
                entry("LOCKED", false),
                entry("a", false),
                entry("b", false),
                entry("manifest-000001", false),
                entry("manifest-000002", false),
                entry("quarantine", true),
                entry("seg", true),
            ]
        );
        assert_eq!(
            fs.list("seg").unwrap(),
            vec![
                entry("000000000001.seg", false),
                entry("000000000002.seg", false)
            ]
        );
        assert!(fs.list("quarantine").unwrap().is_empty());
        assert_eq!(err_kind(fs.list("tmp")), ErrorKind::NotFound);
    }

    pub(super) fn remove_unlinks_a_file_only(store: &Store) {
        let fs = &*store.fs;
        write_file(fs, "a", b"x");
        fs.remove("a").unwrap();
        assert!(!fs.exists("a").unwrap());
        assert_eq!(err_kind(fs.map("a")), ErrorKind::NotFound);
        assert_eq!(err_kind(fs.remove("a")), ErrorKind::NotFound);
        fs.create_dir("d").unwrap();
        assert_eq!(err_kind(fs.remove("d")), ErrorKind::IsADirectory);
        assert!(fs.exists("d").unwrap());
        // The name is free again.
        write_file(fs, "a", b"again");
        assert_eq!(read(fs, "a"), b"again");
    }

    pub(super) fn set_len_cuts_and_extends(store: &Store) {
        let fs = &*store.fs;
        let mut file = fs.create("log").unwrap();
        file.write_all(b"0123456789").unwrap();
        file.set_len(4).unwrap();
        assert_eq!(file.len().unwrap(), 4);
        assert_eq!(read(fs, "log"), b"0123");
        // Writes go to the end, which is now the cut.
        file.write_all(b"xy").unwrap();
        assert_eq!(read(fs, "log"), b"0123xy");
        file.set_len(8).unwrap();
        assert_eq!(read(fs, "log"), b"0123xy\0\0");
        assert_eq!(fs.len("log").unwrap(), 8);
        file.set_len(0).unwrap();
        assert!(fs.map("log").unwrap().is_empty());
    }

    pub(super) fn open_append_appends(store: &Store) {
        let fs = &*store.fs;
        write_file(fs, "manifest-000001", b"abc");
        let mut file = fs.open_append("manifest-000001").unwrap();
        assert_eq!(file.len().unwrap(), 3);
        file.write_all(b"def").unwrap();
        file.sync_data().unwrap();
        assert_eq!(read(fs, "manifest-000001"), b"abcdef");
        let mut again = fs.open_append("manifest-000001").unwrap();
        again.write_all(b"g").unwrap();
        file.write_all(b"h").unwrap();
        assert_eq!(read(fs, "manifest-000001"), b"abcdefgh");
        assert_eq!(
            err_kind(fs.open_append("manifest-000002")),
            ErrorKind::NotFound
        );
    }

    pub(super) fn zero_length_file_maps_empty(store: &Store) {
        let fs = &*store.fs;
        drop(fs.create("empty").unwrap());
        let view = fs.map("empty").unwrap();
        assert!(view.is_empty());
        assert_eq!(&*view, b"");
        assert_eq!(fs.len("empty").unwrap(), 0);
    }

    pub(super) fn map_is_a_view_of_the_file_as_it_was(store: &Store) {
        let fs = &*store.fs;
        let mut file = fs.create("manifest-000001").unwrap();
        file.write_all(b"frame-1").unwrap();
        let before = fs.map("manifest-000001").unwrap();
        file.write_all(b"frame-2").unwrap();
        assert_eq!(
            &*before, b"frame-1",
            "an append must not change a live view"
        );
        assert_eq!(&*fs.map("manifest-000001").unwrap(), b"frame-1frame-2");
    }

    pub(super) fn handles_follow_the_file_not_the_name(store: &Store) {
        let fs = &*store.fs;
        let mut file = fs.create("a").unwrap();
        file.write_all(b"1").unwrap();
        fs.rename_noreplace("a", "b").unwrap();
        file.write_all(b"2").unwrap();
        assert_eq!(read(fs, "b"), b"12");
        fs.remove("b").unwrap();
        // An unlinked file stays writable through its handle, and its bytes are no one's.
        file.write_all(b"3").unwrap();
        assert_eq!(file.len().unwrap(), 3);
        assert!(!fs.exists("b").unwrap());
    }

    pub(super) fn create_dir_is_idempotent_for_directories_only(store: &Store) {
        let fs = &*store.fs;
        fs.create_dir("seg").unwrap();
        write_file(fs, "seg/1.seg", b"kept");
        fs.create_dir("seg").unwrap();
        assert_eq!(read(fs, "seg/1.seg"), b"kept");
        fs.create_dir("").unwrap();
        write_file(fs, "file", b"");
        assert_eq!(err_kind(fs.create_dir("file")), ErrorKind::AlreadyExists);
        assert_eq!(err_kind(fs.create_dir("a/b")), ErrorKind::NotFound);
        fs.create_dir("a").unwrap();
        fs.create_dir("a/b").unwrap();
        assert!(fs.list("a").unwrap() == vec![entry("b", true)]);
    }

    pub(super) fn wrong_kind_of_entry_is_refused(store: &Store) {
        let fs = &*store.fs;
        fs.create_dir("d").unwrap();
        write_file(fs, "f", b"bytes");
        assert_eq!(err_kind(fs.open_append("d")), ErrorKind::IsADirectory);
        assert_eq!(err_kind(fs.map("d")), ErrorKind::IsADirectory);
        assert_eq!(err_kind(fs.len("d")), ErrorKind::IsADirectory);
        assert_eq!(err_kind(fs.list("f")), ErrorKind::NotADirectory);
        assert_eq!(err_kind(fs.sync_dir("f")), ErrorKind::NotADirectory);
        assert_eq!(err_kind(fs.create("f/x")), ErrorKind::NotADirectory);
        assert_eq!(err_kind(fs.create_dir("f/x")), ErrorKind::NotADirectory);
        assert_eq!(err_kind(fs.exists("f/x")), ErrorKind::NotADirectory);
        assert_eq!(
            err_kind(fs.rename_noreplace("d", "f/x")),
            ErrorKind::NotADirectory
        );
        assert_eq!(read(fs, "f"), b"bytes");
    }

    pub(super) fn bad_paths_are_refused(store: &Store) {
        let fs = &*store.fs;
        fs.create_dir("a").unwrap();
        write_file(fs, "a/f", b"in");
        let bad = [
            "..", "../x", "a/../f", "a/..", "/a", "/", "a//f", "a/", ".", "./a", "a/./f", "a\0f",
        ];
        for path in bad {
            let refused = |kind: ErrorKind, what: &str| {
                assert_eq!(
                    kind,
                    ErrorKind::InvalidInput,
                    "{what}({path:?}) was not refused"
                );
            };
            refused(err_kind(fs.create(path)), "create");
            refused(err_kind(fs.create_dir(path)), "create_dir");
            refused(err_kind(fs.open_append(path)), "open_append");
            refused(err_kind(fs.map(path)), "map");
            refused(err_kind(fs.len(path)), "len");
            refused(err_kind(fs.remove(path)), "remove");
            refused(err_kind(fs.sync_dir(path)), "sync_dir");
            refused(err_kind(fs.list(path)), "list");
            refused(err_kind(fs.exists(path)), "exists");
            refused(err_kind(fs.rename_noreplace("a/f", path)), "rename to");
            refused(err_kind(fs.rename_noreplace(path, "g")), "rename from");
        }
        assert_eq!(read(fs, "a/f"), b"in");
        assert!(!fs.exists("g").unwrap());
    }

    pub(super) fn root_is_a_directory_not_a_file(store: &Store) {
        let fs = &*store.fs;
        assert!(fs.exists("").unwrap());
        fs.sync_dir("").unwrap();
        assert!(fs.list("").unwrap().is_empty());
        for result in [fs.create("").map(drop), fs.open_append("").map(drop)] {
            assert_eq!(err_kind(result), ErrorKind::InvalidInput);
        }
        assert_eq!(err_kind(fs.map("")), ErrorKind::InvalidInput);
        assert_eq!(err_kind(fs.len("")), ErrorKind::InvalidInput);
        assert_eq!(err_kind(fs.remove("")), ErrorKind::InvalidInput);
        write_file(fs, "a", b"");
        assert_eq!(
            err_kind(fs.rename_noreplace("", "b")),
            ErrorKind::InvalidInput
        );
        assert_eq!(
            err_kind(fs.rename_noreplace("a", "")),
            ErrorKind::InvalidInput
        );
    }

    pub(super) fn syncs_succeed_on_what_exists(store: &Store) {
        let fs = &*store.fs;
        fs.create_dir("tmp").unwrap();
        let mut file = fs.create("tmp/1.seg").unwrap();
        file.write_all(b"data").unwrap();
        file.sync_data().unwrap();
        fs.sync_dir("tmp").unwrap();
        fs.sync_dir("").unwrap();
        assert_eq!(err_kind(fs.sync_dir("seg")), ErrorKind::NotFound);
    }

    pub(super) fn lock_is_exclusive_until_dropped(store: &Store) {
        let fs = &*store.fs;
        let other = (store.reopen)();
        let held = fs.lock().unwrap();
        assert!(
            fs.exists("LOCK").unwrap(),
            "lock() leaves a LOCK file in the root"
        );
        assert_eq!(err_kind(other.lock()), ErrorKind::WouldBlock);
        assert_eq!(err_kind(fs.lock()), ErrorKind::WouldBlock);
        drop(held);
        let second = other.lock().unwrap();
        assert_eq!(err_kind(fs.lock()), ErrorKind::WouldBlock);
        drop(second);
        drop(fs.lock().unwrap());
        assert_eq!(fs.list("").unwrap(), vec![entry("LOCK", false)]);
    }

    pub(super) fn shared_locks_coexist_and_exclude_the_exclusive_one(store: &Store) {
        let fs = &*store.fs;
        let other = (store.reopen)();
        assert!(
            fs.lock_shared().unwrap().is_none(),
            "no LOCK: nothing to hold"
        );
        assert!(fs.list("").unwrap().is_empty(), "and nothing created");
        drop(fs.lock().unwrap());
        let first = fs.lock_shared().unwrap().expect("LOCK exists now");
        let second = other.lock_shared().unwrap().expect("shared holds coexist");
        assert_eq!(err_kind(fs.lock()), ErrorKind::WouldBlock);
        drop(first);
        assert_eq!(err_kind(other.lock()), ErrorKind::WouldBlock);
        drop(second);
        let writer = fs.lock().unwrap();
        assert_eq!(err_kind(other.lock_shared()), ErrorKind::WouldBlock);
        drop(writer);
        drop(other.lock_shared().unwrap());
    }

    pub(super) fn a_hold_lives_with_its_guard_and_follows_renames(store: &Store) {
        let fs = &*store.fs;
        let other = (store.reopen)();
        fs.create_dir("readers").unwrap();
        let hold = fs.hold("readers/a.0.0").unwrap();
        assert_eq!(err_kind(fs.hold("readers/a.0.0")), ErrorKind::AlreadyExists);
        assert!(
            other.held("readers/a.0.0").unwrap(),
            "alive while its guard is"
        );
        // The hold follows the file, not the name.
        fs.rename_noreplace("readers/a.0.0", "readers/a.1.9")
            .unwrap();
        assert_eq!(err_kind(other.held("readers/a.0.0")), ErrorKind::NotFound);
        assert!(other.held("readers/a.1.9").unwrap());
        assert_eq!(
            fs.list("readers").unwrap(),
            vec![entry("a.1.9", false)],
            "a probe of a live hold removes nothing"
        );
        drop(hold);
        // A hold let go without removing its file is a dead holder's: the probe removes it.
        assert!(!other.held("readers/a.1.9").unwrap());
        assert!(fs.list("readers").unwrap().is_empty());
        assert_eq!(err_kind(other.held("readers/a.1.9")), ErrorKind::NotFound);
        // A plain file nobody ever held is no holder's either.
        write_file(fs, "readers/b.0.0", b"");
        assert!(!other.held("readers/b.0.0").unwrap());
        assert!(fs.list("readers").unwrap().is_empty());
    }

    pub(super) fn read_from_reads_what_lies_past_an_offset(store: &Store) {
        let fs = &*store.fs;
        write_file(fs, "log", b"0123456789");
        assert_eq!(fs.read_from("log", 0).unwrap(), b"0123456789");
        assert_eq!(fs.read_from("log", 7).unwrap(), b"789");
        assert_eq!(fs.read_from("log", 10).unwrap(), b"");
        assert_eq!(fs.read_from("log", u64::MAX).unwrap(), b"");
        assert_eq!(err_kind(fs.read_from("nothing", 0)), ErrorKind::NotFound);
    }
}

mod real_only {
    use std::io::ErrorKind;

    use super::{RealFs, Vfs, err_kind, write_file};
    use crate::vfs::RenameMode;

    #[test]
    fn open_needs_an_existing_directory() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            err_kind(RealFs::open(&dir.path().join("missing"))),
            ErrorKind::NotFound
        );
        std::fs::write(dir.path().join("file"), b"").unwrap();
        assert_eq!(
            err_kind(RealFs::open(&dir.path().join("file"))),
            ErrorKind::NotADirectory
        );
    }

    /// A file where the root should be is named as not a directory, not as "File exists".
    #[test]
    fn create_names_a_file_in_the_way_as_not_a_directory() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("afile");
        std::fs::write(&root, b"x").unwrap();
        let error = RealFs::create(&root).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::NotADirectory);
        assert!(error.to_string().contains("is not a directory"), "{error}");
        assert_eq!(std::fs::read(&root).unwrap(), b"x");
    }

    /// Every call that opens a file by name answers at once on a named pipe or a socket under
    /// that name, refusing it as not a regular file (named), where a plain open(2) of a pipe
    /// would wait for a writer forever. Each call runs on a thread of its own, so a call that
    /// blocks fails this test rather than hanging it.
    #[test]
    fn a_named_pipe_or_socket_is_refused_at_once_never_waited_on() {
        type Call = fn(&RealFs, &str) -> std::io::Result<()>;
        use std::sync::Arc;
        use std::sync::mpsc;
        use std::time::Duration;

        use crate::vfs::NotRegular;

        let dir = tempfile::tempdir().unwrap();
        let fs = Arc::new(RealFs::open(dir.path()).unwrap());
        std::fs::create_dir(dir.path().join("readers")).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            dir.path().join("readers/pipe"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let _socket =
            std::os::unix::net::UnixListener::bind(dir.path().join("readers/socket")).unwrap();
        let calls: [(&str, Call); 5] = [
            ("map", |fs, path| fs.map(path).map(drop)),
            ("read", |fs, path| fs.read(path).map(drop)),
            ("read_from", |fs, path| fs.read_from(path, 0).map(drop)),
            ("open_append", |fs, path| fs.open_append(path).map(drop)),
            ("held", |fs, path| fs.held(path).map(drop)),
        ];
        for name in ["readers/pipe", "readers/socket"] {
            for (call, run) in calls {
                let (answered, answer) = mpsc::channel();
                let fs = Arc::clone(&fs);
                std::thread::spawn(move || answered.send(run(&fs, name)));
                let error = answer
                    .recv_timeout(Duration::from_secs(5))
                    .unwrap_or_else(|_| panic!("{call} of {name} is still waiting after 5 s"))
                    .expect_err(call);
                assert!(NotRegular::is(&error), "{call} of {name}: {error:?}");
                let kind = if name.ends_with("pipe") {
                    "a named pipe"
                } else {
                    "a socket"
                };
                let said = error.to_string();
                assert!(
                    said.contains(name) && said.contains(kind) && said.contains("not a regular"),
                    "{call} of {name}: {said}"
                );
            }
        }
    }

    /// A plain file where strata keeps a folder is named as what it is, by every call that
    /// needs the folder: never "File exists" or a bare "Not a directory".
    #[test]
    fn a_file_in_place_of_a_folder_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let fs = RealFs::open(dir.path()).unwrap();
        std::fs::write(dir.path().join("readers"), b"").unwrap();
        for (error, kind) in [
            (
                fs.create_dir("readers").unwrap_err(),
                ErrorKind::AlreadyExists,
            ),
            (fs.list("readers").unwrap_err(), ErrorKind::NotADirectory),
        ] {
            assert_eq!(error.kind(), kind, "{error}");
            let said = error.to_string();
            assert!(
                said.contains("readers is a regular file, not a directory"),
                "{said}"
            );
        }
    }

    #[test]
    fn create_makes_the_root_and_its_ancestors() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("a/b/store");
        let fs = RealFs::create(&root).unwrap();
        assert!(root.is_dir());
        assert_eq!(fs.root(), root.canonicalize().unwrap());
        // Creating an existing root is opening it.
        write_file(&fs, "manifest-000001", b"m");
        let again = RealFs::create(&root).unwrap();
        assert!(again.exists("manifest-000001").unwrap());
    }

    #[test]
    fn map_is_a_memory_map_not_a_copy() {
        let dir = tempfile::tempdir().unwrap();
        let fs = RealFs::open(dir.path()).unwrap();
        write_file(&fs, "seg", &[7; 4096]);
        let view = fs.map("seg").unwrap();
        assert!(format!("{view:?}").contains("mmap"), "{view:?}");
        assert_eq!(view.len(), 4096);
        assert!(view.iter().all(|&byte| byte == 7));
    }

    #[test]
    fn paths_are_beneath_the_root() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("store")).unwrap();
        let fs = RealFs::open(&dir.path().join("store")).unwrap();
        write_file(&fs, "a", b"inside");
        assert_eq!(
            std::fs::read(dir.path().join("store/a")).unwrap(),
            b"inside"
        );
        assert!(!dir.path().join("a").exists());
    }

    /// Shrunk from `sim_agrees_with_real`: a directory moved beneath itself answers EINVAL on
    /// every file system, so it must not be taken for one without `RENAME_NOREPLACE`.
    #[test]
    fn a_directory_moved_beneath_itself_does_not_decide_the_rename_mode() {
        let dir = tempfile::tempdir().unwrap();
        let fs = RealFs::open(dir.path()).unwrap();
        assert_eq!(fs.rename_mode(), RenameMode::Unprobed);
        fs.create_dir("d").unwrap();
        assert_eq!(
            err_kind(fs.rename_noreplace("d", "d/a")),
            ErrorKind::InvalidInput
        );
        assert_eq!(fs.rename_mode(), RenameMode::Unprobed);
        write_file(&fs, "a", b"x");
        fs.rename_noreplace("a", "b").unwrap();
        assert_eq!(fs.rename_mode(), RenameMode::Noreplace);
    }

    /// Link then unlink refuses an existing target and never replaces it, like the flag.
    #[test]
    fn link_then_unlink_never_replaces_and_leaves_one_name() {
        let dir = tempfile::tempdir().unwrap();
        let fs = RealFs::open_link_unlink(dir.path()).unwrap();
        assert_eq!(fs.rename_mode(), RenameMode::LinkUnlink);
        write_file(&fs, "a", b"new");
        write_file(&fs, "b", b"old");
        assert_eq!(
            err_kind(fs.rename_noreplace("a", "b")),
            ErrorKind::AlreadyExists
        );
        assert_eq!(std::fs::read(dir.path().join("b")).unwrap(), b"old");
        assert_eq!(std::fs::read(dir.path().join("a")).unwrap(), b"new");
        fs.rename_noreplace("a", "c").unwrap();
        assert!(!fs.exists("a").unwrap());
        assert_eq!(std::fs::read(dir.path().join("c")).unwrap(), b"new");
    }
}

mod crash {
    use std::io::ErrorKind;

    use super::{Fault, SimFs, Vfs, VfsFile, err_kind};

    /// One operation tried against the file system or an open file of it.
    type Attempt<'a> = Box<dyn Fn(&mut Box<dyn VfsFile>) -> std::io::Result<()> + 'a>;

    /// A file whose name and `content` are durable.
    fn durable_file(fs: &SimFs, dir: &str, path: &str, content: &[u8]) -> Box<dyn VfsFile> {
        let mut file = fs.create(path).unwrap();
        file.write_all(content).unwrap();
        file.sync_data().unwrap();
        fs.sync_dir(dir).unwrap();
        file
    }

    #[test]
    fn unsynced_data_is_lost_synced_data_kept() {
        let fs = SimFs::new();
        let mut file = durable_file(&fs, "", "manifest-000001", b"one");
        file.write_all(b"two").unwrap();
        assert_eq!(fs.live_bytes("manifest-000001").unwrap(), b"onetwo");
        assert_eq!(fs.durable_bytes("manifest-000001").unwrap(), b"one");
        let after = fs.crash();
        assert_eq!(after.live_bytes("manifest-000001").unwrap(), b"one");
        assert_eq!(after.durable_bytes("manifest-000001").unwrap(), b"one");
        file.sync_data().unwrap();
        assert_eq!(fs.crash().live_bytes("manifest-000001").unwrap(), b"onetwo");
    }

    #[test]
    fn set_len_is_durable_only_after_sync_data() {
        let fs = SimFs::new();
        let mut file = durable_file(&fs, "", "log", b"0123456789");
        file.set_len(3).unwrap();
        assert_eq!(fs.crash().live_bytes("log").unwrap(), b"0123456789");
        file.sync_data().unwrap();
        assert_eq!(fs.crash().live_bytes("log").unwrap(), b"012");
    }

    #[test]
    fn a_created_file_needs_its_directory_synced() {
        let fs = SimFs::new();
        fs.create_dir("tmp").unwrap();
        fs.sync_dir("").unwrap();
        let mut file = fs.create("tmp/1.seg").unwrap();
        file.write_all(b"segment").unwrap();
        file.sync_data().unwrap();
        let after = fs.crash();
        assert!(after.exists("tmp").unwrap());
        assert!(
            !after.exists("tmp/1.seg").unwrap(),
            "synced data, unsynced name"
        );
        assert_eq!(fs.durable_bytes("tmp/1.seg"), None);
        fs.sync_dir("tmp").unwrap();
        assert_eq!(fs.crash().live_bytes("tmp/1.seg").unwrap(), b"segment");
    }

    #[test]
    fn a_created_directory_needs_its_parent_synced() {
        let fs = SimFs::new();
        fs.create_dir("seg").unwrap();
        durable_file(&fs, "seg", "seg/1.seg", b"x");
        let after = fs.crash();
        assert!(!after.exists("seg").unwrap());
        assert!(after.paths().is_empty());
        fs.sync_dir("").unwrap();
        assert_eq!(fs.crash().paths(), vec!["seg/1.seg".to_owned()]);
    }

    #[test]
    fn a_synced_name_without_synced_data_is_an_empty_file() {
        let fs = SimFs::new();
        let mut file = fs.create("a").unwrap();
        file.write_all(b"never synced").unwrap();
        fs.sync_dir("").unwrap();
        assert_eq!(fs.crash().live_bytes("a").unwrap(), b"");
    }

    #[test]
    fn a_rename_needs_its_directories_synced() {
        let fs = SimFs::new();
        fs.create_dir("tmp").unwrap();
        fs.create_dir("seg").unwrap();
        fs.sync_dir("").unwrap();
        durable_file(&fs, "tmp", "tmp/1.seg", b"segment");
        fs.rename_noreplace("tmp/1.seg", "seg/1.seg").unwrap();

        // No sync: the file is back under its old name.
        let after = fs.crash();
        assert_eq!(after.paths(), vec!["tmp/1.seg".to_owned()]);
        assert_eq!(after.live_bytes("tmp/1.seg").unwrap(), b"segment");

        // Destination synced: the new name survives; the old one does too until its directory
        // is synced, and both name one inode, as on a real file system.
        fs.sync_dir("seg").unwrap();
        let after = fs.crash();
        assert_eq!(
            after.paths(),
            vec!["seg/1.seg".to_owned(), "tmp/1.seg".to_owned()]
        );
        let mut through_new = after.open_append("seg/1.seg").unwrap();
        through_new.write_all(b"+").unwrap();
        assert_eq!(after.live_bytes("tmp/1.seg").unwrap(), b"segment+");

        // Both synced: only the new name.
        fs.sync_dir("tmp").unwrap();
        let after = fs.crash();
        assert_eq!(after.paths(), vec!["seg/1.seg".to_owned()]);
        assert_eq!(after.live_bytes("seg/1.seg").unwrap(), b"segment");
    }

    #[test]
    fn a_remove_needs_its_directory_synced() {
        let fs = SimFs::new();
        durable_file(&fs, "", "manifest-000001", b"frames");
        fs.remove("manifest-000001").unwrap();
        assert!(!fs.exists("manifest-000001").unwrap());
        let after = fs.crash();
        assert_eq!(after.live_bytes("manifest-000001").unwrap(), b"frames");
        fs.sync_dir("").unwrap();
        assert!(!fs.crash().exists("manifest-000001").unwrap());
    }

    #[test]
    fn a_removed_but_open_file_can_still_reach_the_disk() {
        // Unlinked, not yet synced: the durable name still points at the inode, so data synced
        // through the open handle is what comes back.
        let fs = SimFs::new();
        let mut file = durable_file(&fs, "", "a", b"old");
        fs.remove("a").unwrap();
        file.write_all(b"+new").unwrap();
        file.sync_data().unwrap();
        assert_eq!(fs.crash().live_bytes("a").unwrap(), b"old+new");
    }

    #[test]
    fn crash_tearing_keeps_exactly_the_prefix_asked_for() {
        let fs = SimFs::new();
        let mut file = durable_file(&fs, "", "log", b"head");
        file.write_all(b"aaaa").unwrap();
        file.write_all(b"bbbbbb").unwrap();
        assert_eq!(fs.crash().live_bytes("log").unwrap(), b"head");
        assert_eq!(fs.crash_tearing(0).live_bytes("log").unwrap(), b"headaaaa");
        assert_eq!(
            fs.crash_tearing(2).live_bytes("log").unwrap(),
            b"headaaaabb"
        );
        assert_eq!(
            fs.crash_tearing(5).live_bytes("log").unwrap(),
            b"headaaaabbbbb"
        );
        assert_eq!(
            fs.crash_tearing(usize::MAX).live_bytes("log").unwrap(),
            b"headaaaabbbbbb"
        );
        // Tearing reads the old image, it does not change it.
        assert_eq!(fs.durable_bytes("log").unwrap(), b"head");
        let torn = fs.crash_tearing(3);
        assert_eq!(torn.durable_bytes("log").unwrap(), b"headaaaabbb");
    }

    #[test]
    fn crash_tearing_tears_only_the_most_recent_write() {
        let fs = SimFs::new();
        let mut first = durable_file(&fs, "", "a", b"");
        let mut second = durable_file(&fs, "", "b", b"");
        first.write_all(b"1111").unwrap();
        second.write_all(b"2222").unwrap();
        let after = fs.crash_tearing(1);
        assert_eq!(
            after.live_bytes("a").unwrap(),
            b"",
            "an earlier file's write is lost"
        );
        assert_eq!(after.live_bytes("b").unwrap(), b"2");
    }

    #[test]
    fn crash_tearing_is_a_plain_crash_when_nothing_is_in_flight() {
        let fs = SimFs::new();
        let mut file = durable_file(&fs, "", "log", b"synced");
        assert_eq!(fs.crash_tearing(2).live_bytes("log").unwrap(), b"synced");
        // The durable bytes are not a prefix of the live ones: no tail to tear.
        file.set_len(2).unwrap();
        file.write_all(b"ZZZZ").unwrap();
        assert_eq!(fs.live_bytes("log").unwrap(), b"syZZZZ");
        assert_eq!(fs.crash_tearing(2).live_bytes("log").unwrap(), b"synced");
        // A write to a file whose name never became durable tears nothing anywhere.
        let other = SimFs::new();
        let mut unnamed = other.create("x").unwrap();
        unnamed.write_all(b"abc").unwrap();
        assert!(other.crash_tearing(2).paths().is_empty());
    }

    #[test]
    fn a_tear_stays_between_the_synced_and_the_live_bytes() {
        let fs = SimFs::new();
        let mut file = durable_file(&fs, "", "log", b"head");
        file.write_all(b"abcdef").unwrap();
        // An unsynced cut into the last write: no tear reaches past what is live.
        file.set_len(6).unwrap();
        assert_eq!(
            fs.crash_tearing(usize::MAX).live_bytes("log").unwrap(),
            b"headab"
        );
        // Synced after the cut, part of the last write is durable: no tear loses it.
        file.sync_data().unwrap();
        assert_eq!(fs.crash_tearing(0).live_bytes("log").unwrap(), b"headab");
    }

    #[test]
    fn crash_at_kills_that_op_and_every_later_one() {
        let fs = SimFs::new();
        let mut file = durable_file(&fs, "", "a", b"kept"); // ops 0..=3
        assert_eq!(fs.ops(), 4);
        fs.crash_at(5);
        file.write_all(b"+4").unwrap(); // op 4
        let err = file.sync_data().unwrap_err(); // op 5
        assert!(SimFs::is_crash(&err), "{err}");
        assert_eq!(err.kind(), ErrorKind::Other);
        assert_eq!(err.to_string(), "simulated crash at op 5");
        let before = (fs.paths(), fs.live_bytes("a"), fs.durable_bytes("a"));
        let later: [std::io::Result<()>; 6] = [
            file.write_all(b"x"),
            file.set_len(0),
            fs.create_dir("d"),
            fs.create("b").map(drop),
            fs.rename_noreplace("a", "c"),
            fs.remove("a"),
        ];
        for result in later {
            let err = result.unwrap_err();
            assert!(SimFs::is_crash(&err), "{err}");
        }
        assert!(SimFs::is_crash(&fs.sync_dir("").unwrap_err()));
        assert_eq!(fs.ops(), 13, "refused operations are still attempts");
        assert_eq!(
            (fs.paths(), fs.live_bytes("a"), fs.durable_bytes("a")),
            before,
            "nothing changes after the crash point"
        );
        // Reads still answer, from the dead process's live image.
        assert_eq!(&*fs.map("a").unwrap(), b"kept+4");
        let after = fs.crash();
        assert_eq!(after.live_bytes("a").unwrap(), b"kept");
        assert_eq!(after.ops(), 0);
        after.create("b").unwrap();
    }

    #[test]
    fn is_crash_recognises_only_the_crash_error() {
        let fs = SimFs::new();
        fs.fail_at(0, Fault::Eio);
        let eio = fs.create_dir("d").unwrap_err();
        assert!(!SimFs::is_crash(&eio));
        assert!(!SimFs::is_crash(&fs.map("missing").unwrap_err()));
        assert!(!SimFs::is_crash(&std::io::Error::other(
            "simulated crash at op 1"
        )));
        fs.crash_at(0);
        assert!(SimFs::is_crash(&fs.create_dir("d").unwrap_err()));
    }

    #[test]
    fn fail_at_fails_exactly_that_op_and_applies_nothing() {
        let fs = SimFs::new();
        let mut file = fs.create("a").unwrap(); // op 0
        fs.fail_at(2, Fault::Eio);
        fs.fail_at(4, Fault::Enospc);
        file.write_all(b"one").unwrap(); // op 1
        let eio = file.write_all(b"two").unwrap_err(); // op 2
        assert_eq!(eio.raw_os_error(), Some(5));
        assert_eq!(
            fs.live_bytes("a").unwrap(),
            b"one",
            "a failed write applies nothing"
        );
        file.write_all(b"three").unwrap(); // op 3
        let enospc = fs.sync_dir("").unwrap_err(); // op 4
        assert_eq!(enospc.raw_os_error(), Some(28));
        assert!(
            !fs.crash().exists("a").unwrap(),
            "a failed sync_dir syncs nothing"
        );
        fs.sync_dir("").unwrap(); // op 5
        file.sync_data().unwrap(); // op 6
        assert_eq!(fs.crash().live_bytes("a").unwrap(), b"onethree");
    }

    #[test]
    fn fail_at_covers_every_kind_of_operation() {
        let fs = SimFs::new();
        let mut file = durable_file(&fs, "", "a", b"abc"); // ops 0..=3
        let attempts: [(&str, Attempt<'_>); 8] = [
            ("create_dir", Box::new(|_| fs.create_dir("d"))),
            ("create", Box::new(|_| fs.create("b").map(drop))),
            ("write_all", Box::new(|f| f.write_all(b"x"))),
            ("sync_data", Box::new(|f| f.sync_data())),
            ("set_len", Box::new(|f| f.set_len(1))),
            ("rename", Box::new(|_| fs.rename_noreplace("a", "c"))),
            ("remove", Box::new(|_| fs.remove("a"))),
            ("sync_dir", Box::new(|_| fs.sync_dir(""))),
        ];
        for (what, attempt) in &attempts {
            let snapshot = (fs.paths(), fs.live_bytes("a"), fs.durable_bytes("a"));
            let durable_names = fs.crash().paths();
            fs.fail_at(fs.ops(), Fault::Enospc);
            let err = attempt(&mut file).unwrap_err();
            assert_eq!(err.raw_os_error(), Some(28), "{what}");
            let after = (fs.paths(), fs.live_bytes("a"), fs.durable_bytes("a"));
            assert_eq!(
                after, snapshot,
                "failed {what} changed the live or durable image"
            );
            assert_eq!(fs.crash().paths(), durable_names, "failed {what}");
        }
        assert_eq!(fs.ops(), 12);
        // And nothing is left armed.
        for (what, attempt) in &attempts[..5] {
            attempt(&mut file).unwrap_or_else(|err| panic!("{what}: {err}"));
        }
    }

    #[test]
    fn ops_counts_exactly_the_mutating_and_sync_calls() {
        let fs = SimFs::new();
        let count = |expected: u64| assert_eq!(fs.ops(), expected);
        count(0);
        fs.create_dir("tmp").unwrap();
        count(1);
        let mut file = fs.create("tmp/a").unwrap();
        count(2);
        file.write_all(b"abc").unwrap();
        count(3);
        file.sync_data().unwrap();
        count(4);
        file.set_len(1).unwrap();
        count(5);
        fs.rename_noreplace("tmp/a", "b").unwrap();
        count(6);
        fs.sync_dir("").unwrap();
        count(7);
        fs.remove("b").unwrap();
        count(8);
        // Failed attempts count too, so an op index names the same call in every run.
        assert!(fs.create_dir("x/y").is_err());
        assert!(fs.remove("b").is_err());
        assert!(fs.create("../b").is_err());
        count(11);
        // Reads, opening for append, and the lock are not operations.
        fs.create_dir("d").unwrap();
        drop(fs.create("d/f").unwrap());
        count(13);
        fs.map("d/f").unwrap();
        fs.len("d/f").unwrap();
        fs.list("d").unwrap();
        fs.exists("d/f").unwrap();
        let appender = fs.open_append("d/f").unwrap();
        appender.len().unwrap();
        let lock = fs.lock().unwrap();
        drop(lock);
        let _ = fs.paths();
        let _ = fs.live_bytes("d/f");
        let _ = fs.durable_bytes("d/f");
        count(13);
        // Clones share the counter, as they share the file system.
        fs.clone().sync_dir("d").unwrap();
        count(14);
    }

    /// A read-only mount refuses every write with EROFS and changes nothing, live or durable;
    /// reads, listings and shared locks still work, and every refusal is counted.
    #[test]
    fn a_read_only_sim_refuses_every_write_and_changes_nothing() {
        let fs = SimFs::new();
        fs.create_dir("d").unwrap();
        let mut file = fs.create("d/f").unwrap();
        file.write_all(b"abc").unwrap();
        file.sync_data().unwrap();
        fs.sync_dir("d").unwrap();
        fs.sync_dir("").unwrap();
        drop(fs.lock().unwrap());
        let ops = fs.ops();
        fs.set_read_only(true);
        let erofs = ErrorKind::ReadOnlyFilesystem;
        assert_eq!(err_kind(fs.create_dir("e")), erofs);
        assert_eq!(err_kind(fs.create("d/g")), erofs);
        assert_eq!(err_kind(fs.open_append("d/f")), erofs);
        assert_eq!(err_kind(fs.rename_noreplace("d/f", "d/h")), erofs);
        assert_eq!(err_kind(fs.remove("d/f")), erofs);
        assert_eq!(err_kind(fs.sync_dir("d")), erofs);
        assert_eq!(err_kind(fs.lock()), erofs);
        // A handle opened before the mount turned read-only cannot write through it either.
        assert_eq!(err_kind(file.write_all(b"d")), erofs);
        assert_eq!(err_kind(file.set_len(0)), erofs);
        assert_eq!(err_kind(file.sync_data()), erofs);
        assert_eq!(fs.refused_writes(), 10);
        assert_eq!(fs.ops(), ops, "refused writes are not numbered operations");
        assert_eq!(&*fs.map("d/f").unwrap(), b"abc");
        assert_eq!(fs.read("d/f").unwrap(), b"abc");
        assert_eq!(fs.paths(), vec!["LOCK", "d/f"]);
        assert_eq!(fs.durable_bytes("d/f").unwrap(), b"abc");
        drop(fs.lock_shared().unwrap().expect("LOCK is there"));
        fs.set_read_only(false);
        fs.create_dir("e").unwrap();
    }

    #[test]
    fn crash_releases_the_lock_and_resets_faults() {
        let fs = SimFs::new();
        let held = fs.lock().unwrap();
        fs.create_dir("a").unwrap();
        fs.crash_at(5);
        fs.fail_at(1, Fault::Eio);
        let after = fs.crash();
        assert_eq!(after.ops(), 0);
        let relock = after.lock().unwrap();
        for _ in 0..8 {
            after.create_dir("a").unwrap();
        }
        assert_eq!(
            err_kind(fs.lock()),
            ErrorKind::WouldBlock,
            "the old one stays held"
        );
        drop(relock);
        drop(held);
    }

    #[test]
    fn a_crashed_image_is_durable_as_a_whole() {
        let fs = SimFs::new();
        fs.create_dir("seg").unwrap();
        fs.sync_dir("").unwrap();
        durable_file(&fs, "seg", "seg/1.seg", b"one");
        let mut pending = fs.create("seg/2.seg").unwrap();
        pending.write_all(b"two").unwrap();
        let after = fs.crash();
        assert_eq!(after.paths(), vec!["seg/1.seg".to_owned()]);
        assert_eq!(after.durable_bytes("seg/1.seg").unwrap(), b"one");
        let twice = after.crash();
        assert_eq!(twice.paths(), after.paths());
        assert_eq!(twice.live_bytes("seg/1.seg"), after.live_bytes("seg/1.seg"));
        // Handles of the dead process write into the old image only.
        pending.write_all(b"more").unwrap();
        assert!(!after.exists("seg/2.seg").unwrap());
    }
}

/// Generated workloads over a small name space, so names collide often.
mod workload {
    use proptest::prelude::*;

    pub(super) const PATHS: [&str; 8] = ["a", "b", "d", "d/a", "d/b", "d/e", "d/e/a", "a/x"];

    #[derive(Debug, Clone)]
    pub(super) enum Op {
        CreateDir(&'static str),
        Create(&'static str),
        OpenAppend(&'static str),
        Write(usize, Vec<u8>),
        SetLen(usize, u64),
        SyncData(usize),
        HandleLen(usize),
        Map(&'static str),
        Len(&'static str),
        Rename(&'static str, &'static str),
        Remove(&'static str),
        SyncDir(&'static str),
        List(&'static str),
        Exists(&'static str),
    }

    fn path() -> impl Strategy<Value = &'static str> {
        prop::sample::select(&PATHS[..])
    }

    fn dir() -> impl Strategy<Value = &'static str> {
        prop::sample::select(&["", "d", "d/e", "a", "b"][..])
    }

    pub(super) fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            2 => path().prop_map(Op::CreateDir),
            4 => path().prop_map(Op::Create),
            1 => path().prop_map(Op::OpenAppend),
            4 => (any::<usize>(), prop::collection::vec(any::<u8>(), 0..6))
                .prop_map(|(h, bytes)| Op::Write(h, bytes)),
            1 => (any::<usize>(), 0u64..12).prop_map(|(h, len)| Op::SetLen(h, len)),
            2 => any::<usize>().prop_map(Op::SyncData),
            1 => any::<usize>().prop_map(Op::HandleLen),
            1 => path().prop_map(Op::Map),
            1 => path().prop_map(Op::Len),
            3 => (path(), path()).prop_map(|(from, to)| Op::Rename(from, to)),
            2 => path().prop_map(Op::Remove),
            2 => dir().prop_map(Op::SyncDir),
            1 => dir().prop_map(Op::List),
            1 => path().prop_map(Op::Exists),
        ]
    }
}

mod laws {
    use std::io;

    use proptest::prelude::*;

    use super::workload::{Op, PATHS, op};
    use super::{DirEntry, RealFs, SimFs, Vfs, VfsFile};

    /// What one call answered: a value, or the kind of its error.
    #[derive(Debug, PartialEq, Eq)]
    enum Answer {
        Done,
        Bytes(Vec<u8>),
        Len(u64),
        Bool(bool),
        Entries(Vec<DirEntry>),
        Skipped,
        Failed(io::ErrorKind),
    }

    fn answer<T>(result: io::Result<T>, value: impl FnOnce(T) -> Answer) -> Answer {
        result.map_or_else(|err| Answer::Failed(err.kind()), value)
    }

    /// Applies `op` to `fs`, whose open handles are `files`.
    fn apply(fs: &dyn Vfs, files: &mut Vec<Box<dyn VfsFile>>, op: &Op) -> Answer {
        let handle = |files: &mut Vec<Box<dyn VfsFile>>, h: usize| {
            let n_files = files.len();
            (n_files > 0).then(|| h % n_files)
        };
        match op {
            Op::CreateDir(path) => answer(fs.create_dir(path), |()| Answer::Done),
            Op::Create(path) | Op::OpenAppend(path) => {
                let opened = if matches!(op, Op::Create(_)) {
                    fs.create(path)
                } else {
                    fs.open_append(path)
                };
                answer(opened, |file| {
                    files.push(file);
                    Answer::Done
                })
            }
            Op::Write(h, bytes) => match handle(files, *h) {
                Some(idx) => answer(files[idx].write_all(bytes), |()| Answer::Done),
                None => Answer::Skipped,
            },
            Op::SetLen(h, len) => match handle(files, *h) {
                Some(idx) => answer(files[idx].set_len(*len), |()| Answer::Done),
                None => Answer::Skipped,
            },
            Op::SyncData(h) => match handle(files, *h) {
                Some(idx) => answer(files[idx].sync_data(), |()| Answer::Done),
                None => Answer::Skipped,
            },
            Op::HandleLen(h) => match handle(files, *h) {
                Some(idx) => answer(files[idx].len(), Answer::Len),
                None => Answer::Skipped,
            },
            Op::Map(path) => answer(fs.map(path), |view| Answer::Bytes(view.to_vec())),
            Op::Len(path) => answer(fs.len(path), Answer::Len),
            Op::Rename(from, to) => answer(fs.rename_noreplace(from, to), |()| Answer::Done),
            Op::Remove(path) => answer(fs.remove(path), |()| Answer::Done),
            Op::SyncDir(path) => answer(fs.sync_dir(path), |()| Answer::Done),
            Op::List(path) => answer(fs.list(path), Answer::Entries),
            Op::Exists(path) => answer(fs.exists(path), Answer::Bool),
        }
    }

    /// Every live file's bytes and every live directory's listing, reached through `list`.
    fn tree(fs: &dyn Vfs) -> Vec<(String, Answer)> {
        let mut seen = Vec::new();
        let mut pending = vec![String::new()];
        while let Some(dir) = pending.pop() {
            let entries = fs.list(&dir).unwrap();
            for entry in &entries {
                let path = if dir.is_empty() {
                    entry.name.clone()
                } else {
                    format!("{dir}/{}", entry.name)
                };
                if entry.is_dir {
                    pending.push(path);
                } else {
                    seen.push((path.clone(), Answer::Bytes(fs.map(&path).unwrap().to_vec())));
                }
            }
            seen.push((dir, Answer::Entries(entries)));
        }
        seen.sort_by(|a, b| a.0.cmp(&b.0));
        seen
    }

    /// Makes every live file's data and every live directory's entries durable.
    fn sync_everything(fs: &SimFs) {
        let mut pending = vec![String::new()];
        while let Some(dir) = pending.pop() {
            for entry in fs.list(&dir).unwrap() {
                let path = if dir.is_empty() {
                    entry.name
                } else {
                    format!("{dir}/{}", entry.name)
                };
                if entry.is_dir {
                    pending.push(path);
                } else {
                    fs.open_append(&path).unwrap().sync_data().unwrap();
                }
            }
            fs.sync_dir(&dir).unwrap();
        }
    }

    /// Runs `ops` on a fresh SimFs, renaming only files: a directory reached through two durable
    /// names keeps only one of them after a crash, which these laws do not model.
    fn run_sim(ops: &[Op]) -> SimFs {
        let fs = SimFs::new();
        let mut files = Vec::new();
        for op in ops {
            if let Op::Rename(from, _) = op
                && fs.live_bytes(from).is_none()
            {
                continue;
            }
            apply(&fs, &mut files, op);
        }
        fs
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// The simulation answers every generated call as the real file system does: the same
        /// values, the same error kinds, the same tree at the end.
        #[test]
        fn sim_agrees_with_real(ops in prop::collection::vec(op(), 1..40)) {
            let dir = tempfile::tempdir().unwrap();
            let real = RealFs::open(dir.path()).unwrap();
            let sim = SimFs::new();
            let (mut real_files, mut sim_files) = (Vec::new(), Vec::new());
            for (op_idx, op) in ops.iter().enumerate() {
                let from_real = apply(&real, &mut real_files, op);
                let from_sim = apply(&sim, &mut sim_files, op);
                prop_assert_eq!(from_real, from_sim, "op {} {:?}", op_idx, op);
            }
            prop_assert_eq!(tree(&real), tree(&sim));
        }

        /// The same, on a file system without `RENAME_NOREPLACE`: the real link-then-unlink and
        /// the simulated one answer alike.
        #[test]
        fn sim_without_noreplace_agrees_with_real_link_unlink(
            ops in prop::collection::vec(op(), 1..40),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let real = RealFs::open_link_unlink(dir.path()).unwrap();
            let sim = SimFs::without_noreplace();
            prop_assert_eq!(real.rename_mode(), sim.rename_mode());
            let (mut real_files, mut sim_files) = (Vec::new(), Vec::new());
            for (op_idx, op) in ops.iter().enumerate() {
                let from_real = apply(&real, &mut real_files, op);
                let from_sim = apply(&sim, &mut sim_files, op);
                prop_assert_eq!(from_real, from_sim, "op {} {:?}", op_idx, op);
            }
            prop_assert_eq!(tree(&real), tree(&sim));
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// durable_bytes predicts exactly what crash() keeps, path by path.
        #[test]
        fn durable_bytes_predict_the_crash(ops in prop::collection::vec(op(), 1..60)) {
            let fs = run_sim(&ops);
            let after = fs.crash();
            for path in PATHS {
                prop_assert_eq!(after.live_bytes(path), fs.durable_bytes(path), "{}", path);
                prop_assert_eq!(after.durable_bytes(path), fs.durable_bytes(path), "{}", path);
            }
            let predicted: Vec<String> = PATHS
                .iter()
                .filter(|path| fs.durable_bytes(path).is_some())
                .map(|path| (*path).to_owned())
                .collect();
            let mut kept = after.paths();
            kept.retain(|path| PATHS.contains(&path.as_str()));
            let mut predicted = predicted;
            predicted.sort_unstable();
            prop_assert_eq!(kept, predicted);
        }

        /// After every file and directory is synced, a crash loses nothing.
        #[test]
        fn a_fully_synced_store_survives_a_crash(ops in prop::collection::vec(op(), 1..60)) {
            let fs = run_sim(&ops);
            sync_everything(&fs);
            let after = fs.crash();
            prop_assert_eq!(tree(&after), tree(&fs));
            prop_assert_eq!(after.paths(), fs.paths());
        }

        /// A tear changes at most one file of the plain crash, and only by keeping more of it.
        #[test]
        fn a_tear_only_lengthens_one_file(
            ops in prop::collection::vec(op(), 1..60),
            keep in 0usize..8,
        ) {
            check_a_tear_only_lengthens_one_file(&ops, keep)?;
        }
    }

    /// The law behind `a_tear_only_lengthens_one_file`. One file may survive a crash under two
    /// names: a rename between directories whose new directory was synced and whose old one was
    /// not keeps both entries, and both name the same file. So "one file" is one set of bytes,
    /// before and after the tear, whatever the number of names showing it.
    fn check_a_tear_only_lengthens_one_file(ops: &[Op], keep: usize) -> Result<(), TestCaseError> {
        let fs = run_sim(ops);
        let plain = fs.crash();
        let torn = fs.crash_tearing(keep);
        prop_assert_eq!(torn.paths(), plain.paths());
        let mut changed: Option<(Vec<u8>, Vec<u8>)> = None;
        for path in plain.paths() {
            let plain_bytes = plain.live_bytes(&path).unwrap();
            let torn_bytes = torn.live_bytes(&path).unwrap();
            if plain_bytes != torn_bytes {
                prop_assert!(torn_bytes.len() > plain_bytes.len(), "{}", path);
                prop_assert!(torn_bytes.starts_with(&plain_bytes), "{}", path);
                match &changed {
                    None => changed = Some((plain_bytes, torn_bytes)),
                    Some(one) => prop_assert_eq!(
                        one,
                        &(plain_bytes, torn_bytes),
                        "a second file changed: {}",
                        path
                    ),
                }
            }
        }
        Ok(())
    }

    /// Shrunk from `a_tear_only_lengthens_one_file`: `a/x` moved to `b` with only the root
    /// synced survives as both `a/x` and `b`, and the torn write shows through both names.
    #[test]
    fn a_torn_write_shows_through_both_names_a_half_synced_rename_left() {
        let ops = [
            Op::CreateDir("a"),
            Op::Create("a/x"),
            Op::SyncDir("a"),
            Op::Rename("a/x", "b"),
            Op::SyncDir(""),
            Op::CreateDir("a"),
            Op::Write(0, vec![0]),
        ];
        let fs = run_sim(&ops);
        let torn = fs.crash_tearing(1);
        assert_eq!(torn.live_bytes("a/x"), Some(vec![0]));
        assert_eq!(torn.live_bytes("b"), Some(vec![0]));
        check_a_tear_only_lengthens_one_file(&ops, 1).unwrap();
    }
}
