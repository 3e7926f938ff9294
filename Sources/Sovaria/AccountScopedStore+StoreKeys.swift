extension AccountScopedStore {
    /// The account a key of the wrapped store belongs to, and the key that account's view hands
    /// out for it: `sov:account:alice/sov:queue:0001` is `alice`'s `sov:queue:0001`.
    ///
    /// `nil` for a key outside ``keyPrefix`` (the implicit account's, or an app's own) and for one
    /// under it that is no account's (no `/`, an id that is not valid): the keys ``accounts(in:)``
    /// leaves out. Reads the key's name only.
    public static func owner(ofStoreKey key: String) -> (account: AccountID, key: String)? {
        guard StoreKey.hasBytePrefix(key, keyPrefix) else { return nil }
        let rest = key.utf8.dropFirst(keyPrefix.utf8.count)
        guard let slash = rest.firstIndex(of: UInt8(ascii: "/")),
            let account = try? AccountID(String(decoding: rest[..<slash], as: UTF8.self))
        else { return nil }
        // The id and the `/` are ASCII: what follows them is whole characters of `key`.
        return (account, String(decoding: rest[rest.index(after: slash)...], as: UTF8.self))
    }
}
