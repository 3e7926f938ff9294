extension OfflineStoreError {
    /// This error, with `path` named in its message when it is ``Code/corrupt`` and does not name
    /// it yet: an engine's own text ("database disk image is malformed", "block checksum
    /// mismatch") does not say which file, and a person needs to know what to restore or move.
    ///
    /// - Parameter path: the damaged file, or the store's folder when the engine cannot tell which
    ///   of its files failed.
    package func namingDamagedFile(_ path: String) -> OfflineStoreError {
        guard code == .corrupt, !message.contains(path) else { return self }
        var named = self
        named.message += " (damaged: \(path))"
        return named
    }
}
