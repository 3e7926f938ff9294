import CSodium

/// The libsodium library this process links.
public enum SodiumLibrary {
    /// Its version, e.g. `"1.0.18"`.
    public static var version: String { String(cString: sodium_version_string()) }
}
