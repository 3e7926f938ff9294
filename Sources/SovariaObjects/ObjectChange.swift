/// What changed in a collection since the last event of ``ObjectStore/changes()``: ids inserted,
/// updated and removed.
///
/// - Important: An event says which ids to read again, not what they hold: read them with
///   ``ObjectStore/object(_:)`` (`notes.object(id.string)`). Ids are ``ObjectID``s, compared by
///   their bytes, as keys are. Each id is in at most one set. An id whose earlier state the
///   writer did not read (no one was observing when the write began) is in ``updated``.
public struct ObjectChange: Sendable, Hashable {
    /// Ids that had no object before and have one now.
    public var inserted: Set<ObjectID>
    /// Ids whose object was replaced.
    public var updated: Set<ObjectID>
    /// Ids whose object was removed.
    public var removed: Set<ObjectID>

    /// A change of these ids.
    ///
    /// - Parameters:
    ///   - inserted: Ids that had no object before.
    ///   - updated: Ids whose object was replaced.
    ///   - removed: Ids whose object was removed.
    public init(inserted: Set<ObjectID> = [], updated: Set<ObjectID> = [], removed: Set<ObjectID> = []) {
        self.inserted = inserted
        self.updated = updated
        self.removed = removed
    }

    /// Whether no id changed.
    public var isEmpty: Bool { inserted.isEmpty && updated.isEmpty && removed.isEmpty }

    /// Every id that changed.
    public var ids: Set<ObjectID> { inserted.union(updated).union(removed) }

    /// Adds `later`, a change that happened after this one, as one event: an id's last change
    /// wins, except that an object inserted and then replaced is still inserted, and one removed
    /// and then written again is updated.
    ///
    /// - Parameter later: The change that came after this one.
    public mutating func merge(_ later: ObjectChange) {
        for id in later.removed {
            inserted.remove(id)
            updated.remove(id)
            removed.insert(id)
        }
        for id in later.inserted.union(later.updated) {
            if removed.remove(id) != nil {
                updated.insert(id)
            } else if !inserted.contains(id) {
                if later.inserted.contains(id) { inserted.insert(id) } else { updated.insert(id) }
            }
        }
    }
}
