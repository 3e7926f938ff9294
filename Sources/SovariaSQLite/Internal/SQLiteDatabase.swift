import Foundation
import Sovaria
import SovariaPlumbing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Everything open on one SQLite file in this process: one writer connection, a pool of reader
/// connections and the queue writes run on. Every ``SQLiteOfflineStore`` on the same file
/// shares one, through ``open(fileURL:durability:busyTimeoutMilliseconds:)``.
///
/// Closes when the last store on the file goes, on the thread that releases it: readers first,
/// then the writer, whose close checkpoints the WAL into the file and removes it. The registry
/// makes an open of the same path wait for that close instead of racing it.
final class SQLiteDatabase: Sendable {
    private static let openDatabases = OpenOncePerPath<SQLiteDatabase>()

    /// The canonical path of the database file.
    let path: String
    private let writer: SQLiteWriter
    private let readers: SQLiteReaderPool
    private let queue: BlockingWorkQueue
    /// Held by whoever uses the writer: a job on the queue, or a write run on its caller's thread.
    private let writerInUse = SQLiteWriterLock()
    /// Batches that arrive while a commit runs join the next one (group commit).
    private let commits: GroupCommit<(batch: [StoreWrite], durability: Durability)>

    /// The database open on `fileURL` in this process, or a newly opened one.
    ///
    /// Creates the folder (mode 0700) and the file (mode 0600, which SQLite gives its -wal and
    /// -shm files too) when missing. `durability` and `busyTimeoutMilliseconds` set up a new
    /// writer; a shared one switches durability per write.
    static func open(fileURL: URL, durability: Durability, busyTimeoutMilliseconds: Int32) throws -> SQLiteDatabase {
        let folder = fileURL.deletingLastPathComponent()
        do {
            try POSIXFile.makeDirectories(folder.path, mode: 0o700, engine: .sqlite)
        } catch  where error.code == .permissionDenied {
            throw error  // SQLite would only say it cannot open the file, as an I/O error
        } catch {
            // SQLite's open below reports the problem with its own code.
        }
        let folderPath = OpenOncePerPath<SQLiteDatabase>.canonicalPath(folder.path)
        let path = OpenOncePerPath<SQLiteDatabase>.canonicalPath(folderPath + "/" + fileURL.lastPathComponent)
        return try openDatabases.handle(for: path) {
            try SQLiteDatabase(path: path, durability: durability, busyTimeoutMilliseconds: busyTimeoutMilliseconds)
        }
    }

    private init(path: String, durability: Durability, busyTimeoutMilliseconds: Int32) throws(OfflineStoreError) {
        self.path = path
        try SQLiteFileHeader.checkNotCutShort(path)
        createPrivateFile(path)
        do {
            writer = try SQLiteWriter(
                path: path, durability: durability, busyTimeoutMilliseconds: busyTimeoutMilliseconds)
        } catch {
            throw readOnlyMountError(path, cause: error) ?? unwritableFolderError(path, cause: error) ?? error
        }
        readers = try SQLiteReaderPool(path: path, busyTimeoutMilliseconds: busyTimeoutMilliseconds)
        let queue = BlockingWorkQueue(label: "sovaria.sqlite")
        self.queue = queue
        let (writer, writerInUse) = (writer, writerInUse)
        commits = GroupCommit(queue: queue, maxSizePerCommit: Self.maxWritesPerGroup) { items in
            writerInUse.withLock { writer.applyGroup(items) }
        }
    }

    /// The most writes one shared commit takes (a bigger batch still commits, alone).
    static let maxWritesPerGroup = 4_096

    /// Commits `batch` as `durability` says, on the queue, sharing the commit with every batch
    /// that arrives while another commit runs (group commit): a synced group syncs once.
    func commit(_ batch: [StoreWrite], durability: Durability) async throws {
        try await commits.write((batch, durability), size: batch.count)
    }

    deinit {
        readers.closeAll()
        writer.close()
        Self.openDatabases.didClose(path)
    }

    /// Runs `body` on a reader, on the caller's thread.
    func read<Result>(_ body: (SQLiteReader) throws(OfflineStoreError) -> Result) throws(OfflineStoreError) -> Result {
        try readers.withReader(body)
    }

    /// Runs `body` on a reader on the queue, off Swift's cooperative threads: for long reads.
    func readOnQueue<Result: Sendable>(
        _ body: @escaping @Sendable (SQLiteReader) throws(OfflineStoreError) -> Result
    ) async throws -> Result {
        try await queue.runConcurrently { [self] in try readers.withReader(body) }
    }

    /// Runs `body` on the writer, on the queue, alone: off Swift's cooperative threads, since a
    /// commit may wait for the disk and `BEGIN IMMEDIATE` for another process's lock.
    func write<Result: Sendable>(_ body: @escaping @Sendable (SQLiteWriter) throws -> Result) async throws -> Result {
        try await queue.runAlone { [self] in try writerInUse.withLock { try body(writer) } }
    }

    /// Runs `body` on the writer on the caller's thread when no other write is using it; `false`
    /// when one is (or when `body` says it could not finish without waiting).
    func writeIfIdle(_ body: (SQLiteWriter) throws(OfflineStoreError) -> Bool) throws(OfflineStoreError) -> Bool {
        let outcome: Result<Bool, OfflineStoreError>? = writerInUse.withLockIfAvailable {
            Result { () throws(OfflineStoreError) in try body(writer) }
        }
        return try outcome?.get() ?? false
    }
}

/// The error for a database on a read-only mount, where SQLite only says it cannot open the file;
/// `nil` when the mount is writable.
private func readOnlyMountError(_ path: String, cause: OfflineStoreError) -> OfflineStoreError? {
    var info = statvfs()
    guard statvfs(path, &info) == 0, info.f_flag & UInt(ST_RDONLY) != 0 else { return nil }
    return OfflineStoreError(
        .permissionDenied,
        "The file system holding \(path) is mounted read-only, and SQLite writes its -wal and -shm files even "
            + "to read a store: remount it read-write, or copy the database to a writable folder. (\(cause.message))",
        engine: .sqlite, nativeCode: cause.nativeCode)
}

/// The error for a database whose folder this process may not write (its mode, owner, or
/// `chattr +i`), where SQLite only says it cannot open the file or its -wal; `nil` when the folder
/// is writable or the open failed for another reason.
private func unwritableFolderError(_ path: String, cause: OfflineStoreError) -> OfflineStoreError? {
    let cantOpen: Int32 = 14  // SQLITE_CANTOPEN, SQLite's code when it cannot create the -wal
    guard cause.code == .io, cause.nativeCode.map({ $0 & 0xFF }) == cantOpen else { return nil }
    let folder = POSIXFile.parentPath(of: path)
    guard access(folder, W_OK) != 0, [EACCES, EPERM, EROFS].contains(errno) else { return nil }
    let reason = String(cString: strerror(errno))
    return OfflineStoreError(
        .permissionDenied,
        "The folder \(folder) cannot be written (\(reason)), and SQLite creates its -wal and -shm files there even "
            + "to read a store: make the folder writable by this process (check its mode, owner and attributes), "
            + "or copy the database to a writable folder. (\(cause.message))",
        engine: .sqlite, nativeCode: cause.nativeCode)
}

/// Creates an empty file with mode 0600 unless one exists: never truncates, so a racing open
/// of the same file by another process is harmless.
private func createPrivateFile(_ path: String) {
    let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
    if descriptor >= 0 { close(descriptor) }
}
