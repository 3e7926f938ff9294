import Foundation
import Sovaria

extension FileCache {
    /// Opens the cache of one account's private files: a folder of its own under `directory`
    /// (``accountDirectory(of:in:)``) and its records in the account's part of `metadata`
    /// (`AccountScopedStore`), so two accounts of one device never see each other's files and a
    /// sign-out forgets one account's with ``removeAll()``.
    ///
    /// ```swift
    /// let attachments = try await FileCache(directory: cachesFolder, metadata: store, account: user)
    /// // At sign-out: forget the user's files.
    /// try await attachments.removeAll()
    /// ```
    ///
    /// The accounts' caches share one bound. Every account's files under `directory` whose
    /// records are in `metadata` (the same store object) count toward it, those of accounts with
    /// no cache open now included, and a pass deletes the least recently used first whoever owns
    /// them, down to 90% of the bound: an open account's through its cache, so its leases and its
    /// 30-second protection hold; a closed account's file first and then its record, holding the
    /// account's folder lock. The bound is that of the cache whose download (or
    /// ``evictIfOverBound()``) runs the pass: give every account's cache the same `size`.
    /// A download within the bound reads totals in memory; the closed accounts are counted from
    /// their records' key names (and their `files/` folders) by the first pass after an
    /// account's cache opens or closes.
    ///
    /// Files every user may see (public images) belong in one device-wide cache opened without an
    /// account: it keeps its own bound, and the accounts' passes neither count nor touch its
    /// files. The files' contents are stored as downloaded: protect the folder with the
    /// platform's file protection where another user of the device must not read them.
    ///
    /// - Important: One directory per store for the accounts' caches: a closed account's records
    ///   are taken to name files in its folder under the `directory` of the cache running the
    ///   pass. Only the caches of this process are seen as open; a closed account whose folder
    ///   another process has open is left alone (its folder is locked) but still counted.
    /// - Throws: `.locked` when a cache of this account is open on the folder already; the
    ///   store's errors.
    public convenience init(
        directory: URL, metadata: any OfflineStore, account: AccountID, configuration: Configuration = Configuration()
    ) async throws {
        try await self.init(
            directory: Self.accountDirectory(of: account, in: directory),
            metadata: AccountScopedStore(wrapping: metadata, account: account), configuration: configuration,
            sharing: (account, directory, metadata))
    }

    /// The folder of `account`'s files under `directory`: `account-` and the id's UTF-8 bytes in
    /// lowercase hex. Hex because a file system may compare names without case (macOS, Windows)
    /// and `Ada` and `ada` are two accounts, and because an id such as `..` must not name a
    /// folder of its own.
    public static func accountDirectory(of account: AccountID, in directory: URL) -> URL {
        let hex = account.rawValue.utf8.map { String($0, radix: 16).leftPadded(to: 2) }.joined()
        return directory.appendingPathComponent("account-" + hex, isDirectory: true)
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
