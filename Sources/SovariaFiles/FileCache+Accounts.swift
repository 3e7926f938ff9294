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
    /// Files every user may see (public images) belong in one device-wide cache opened without an
    /// account. Each account's cache keeps its own bound (`configuration.size`). The files'
    /// contents are stored as downloaded: protect the folder with the platform's file
    /// protection where another user of the device must not read them.
    ///
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
