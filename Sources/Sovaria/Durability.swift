/// How far a write has gone when the call that made it returns; the same meaning on every
/// persistent engine.
public enum Durability: Sendable, Hashable {
    /// On stable storage: the write survives power loss. The default.
    case synced
    /// Handed to the operating system: the write survives a crash of the process, not of the
    /// machine. Faster, because nothing waits for the disk.
    case flushed
}
