import SovariaPlumbing
import SovariaQueue
import SovariaSync

/// What the cached answers of one table can be reached by, kept between a change feed's pages:
/// for each answer (by its id, at one version) the keys of the rows it holds and its read's
/// first `eq` filter, indexed both ways, so a page finds the answers a change can alter without
/// meeting every answer: a lookup of the change's key, and a filter evaluation for each answer
/// whose `eq` its new value passes (and each with none).
///
/// An answer is added when it is first met or met at a new version, and removed when it is gone
/// from the table's answers or replaced; nothing is rebuilt for the answers that stayed. The
/// parsed answers it keeps are the ones `ParsedAnswers` keeps too (one object, shared by
/// reference, read-only); its bound counts the bodies they were parsed from.
struct TableReach {
    /// What one answer can be reached by.
    struct Entry {
        /// The answer's version when it was parsed (`nil`: none, never taken as known).
        var version: UInt64?
        /// The parsed answer, or `nil` when every change counts for it (it cannot tell what it
        /// holds: not rows, a page past an offset, rows without their key, a settled read).
        var parsed: OverlayCachedAnswer?
        /// The UTF-8 bytes of the body it was parsed from.
        var bytes: Int
        /// Its place among the answers of the call that met it last, and that call.
        var slot = 0
        var call: UInt64 = 0
    }

    /// What ``meet(_:at:body:slot:call:)`` found.
    enum Meeting: Equatable {
        /// Kept at that version: it takes the slot.
        case known
        /// Met before in the same call, at `slot`: an id given twice.
        case again(slot: Int)
        /// Not kept at that version.
        case unknown
    }

    /// Each entry under a handle of its own (`nil`: a handle free again): the indexes below name
    /// answers by handle, an integer, which costs less to hash than the id (its read's text) and
    /// finds the entry without a lookup.
    private var kept: [Entry?] = []
    /// Each handle's id (`""` for a free handle).
    private var ids: [String] = []
    /// Each kept id's handle, the id compared byte for byte: two reads that spell one text two
    /// ways (`é` composed or not) are two answers, which Swift's `String` keys would merge.
    private var handles: [AnswerID: Int] = [:]
    private var freeHandles: [Int] = []
    /// The handle met or set at each slot, as last seen: a page asks about the table's answers
    /// in the order the last one did, as a rule, so ``meet(_:at:body:slot:call:)`` compares the
    /// id with that handle's before it hashes it (an id of a few dozen bytes: the hash was most
    /// of a meeting's cost with 1,000 answers cached). Checked against ``ids`` at each use.
    private var slotHandles: [Int] = []
    /// Primary key column → key text → the answers holding that row.
    private var holders: [String: [String: CompactSet<Int>]] = [:]
    private var filters = EqualityIndex<Int>()
    /// The answers every change counts for.
    private var everyChange: Set<Int> = []
    /// The body bytes of the entries kept.
    private(set) var bytes = 0
    /// For each handle, the last change that found it (``slots(alteredBy:row:into:)`` drops repeats).
    private var lastFound: [UInt64] = []
    private var changesMet: UInt64 = 0

    /// Rows of a page's upserts, parsed, by the change's position, each with the text it was
    /// parsed from (a row at that position with another text is parsed afresh) and whether
    /// writing the row gives that text back (`JSONParser.pageRow(_:sharingKeys:)`).
    typealias PageRows = [Int64: (text: String, row: JSONObject, isWrittenAsIs: Bool)]

    /// The rows of the last page's upserts that some answer applies, parsed to find what they
    /// reach: the page's answers apply them without parsing them again. Replaced by each page.
    var pageRows: PageRows = [:]

    /// Moves with every change to what ``slots(alteredBy:row:into:)`` finds: an entry set or
    /// removed, or met at another slot.
    private(set) var revision: UInt64 = 0

    /// What a call found for its changes, at the ``revision`` it was found at.
    struct Found {
        var revision: UInt64
        /// The call's number of slots.
        var count: Int
        var changes: [RowChange]
        /// For each slot, the indexes of the changes that can alter its answer.
        var found: [[Int]?]
    }

    /// The last call's: a controller that read the bodies of the answers some change alters asks
    /// again with them, and when those are the bodies kept, nothing found has moved. Held until
    /// the next call: at most a page of changes, which ``pageRows`` holds too.
    var lastCall: Found?

    /// The calls begun, to tell the entries one call met (``Entry/call``).
    private var calls: UInt64 = 0

    /// How many entries are kept.
    var count: Int { handles.count }

    /// `id`'s entry, if kept.
    func entry(_ id: String) -> Entry? {
        handles[AnswerID(id)].flatMap { kept[$0] }
    }

    /// Begins a call: the number its entries are stamped with.
    mutating func beginCall() -> UInt64 {
        calls += 1
        return calls
    }

    /// Whether `id` is known at `version` (and from `body`, when given: a body read after the
    /// version may be a later one); if so, its entry takes `slot` in `call` (one lookup).
    mutating func meet(_ id: String, at version: UInt64?, body: String?, slot: Int, call: UInt64) -> Meeting {
        guard let handle = handle(of: id, at: slot), let entry = kept[handle] else { return .unknown }
        if entry.call == call { return .again(slot: entry.slot) }
        guard let version, entry.version == version else { return .unknown }
        if let body, let parsed = entry.parsed, parsed.cachedBody?.hasSameUTF8Bytes(as: body) != true {
            return .unknown
        }
        if entry.slot != slot { revision += 1 }
        kept[handle]?.slot = slot
        kept[handle]?.call = call
        remember(handle, at: slot)
        return .known
    }

    /// `id`'s handle: the one last seen at `slot` when it is `id`'s, else found by its hash.
    private func handle(of id: String, at slot: Int) -> Int? {
        if slot < slotHandles.count {
            let handle = slotHandles[slot]
            if handle >= 0, kept[handle] != nil, ids[handle].hasSameUTF8Bytes(as: id) { return handle }
        }
        return handles[AnswerID(id)]
    }

    /// Notes that `handle` was met at `slot`, for the next call's ``handle(of:at:)``.
    private mutating func remember(_ handle: Int, at slot: Int) {
        if slot >= slotHandles.count {
            slotHandles.append(contentsOf: repeatElement(-1, count: slot + 1 - slotHandles.count))
        }
        slotHandles[slot] = handle
    }

    /// Forgets every entry `call` did not meet.
    mutating func removeAll(notMetIn call: UInt64) {
        for (handle, entry) in kept.enumerated() where entry.map({ $0.call != call }) == true { remove(ids[handle]) }
    }

    /// Keeps `entry` as `id`'s, replacing what it had (found at the entry's slot first, as
    /// ``meet(_:at:body:slot:call:)`` finds it).
    mutating func set(_ id: String, _ entry: Entry) {
        revision += 1
        if let handle = handle(of: id, at: entry.slot), let old = kept[handle], let was = old.parsed,
            let parsed = entry.parsed,
            // One answer's positions taken by the other: the same read's, under the same rules.
            was.positionsID == parsed.positionsID
                || (was.table.primaryKey == parsed.table.primaryKey && was.query.filters == parsed.query.filters
                    && was.comparison.nonTextColumns == parsed.comparison.nonTextColumns)
        {
            // A new version of the same read: its filter stays indexed; only the rows it holds move
            // (none, where the positions are one answer's).
            let primaryKey = parsed.table.primaryKey
            if was.positionsID != parsed.positionsID {
                modifyHolders(of: primaryKey) { byKey in
                    for key in was.positions.keys where parsed.positions[key] == nil {
                        Self.remove(handle, from: key, in: &byKey)
                    }
                    for key in parsed.positions.keys where was.positions[key] == nil {
                        byKey[key, default: CompactSet()].insert(handle)
                    }
                }
            }
            kept[handle] = entry
            bytes += entry.bytes - old.bytes
            remember(handle, at: entry.slot)
            return
        }
        remove(id)
        let handle: Int
        if let free = freeHandles.popLast() {
            handle = free
            (kept[handle], ids[handle]) = (entry, id)
        } else {
            handle = kept.count
            kept.append(entry)
            ids.append(id)
            lastFound.append(0)
        }
        handles[AnswerID(id)] = handle
        remember(handle, at: entry.slot)
        bytes += entry.bytes
        guard let parsed = entry.parsed else {
            everyChange.insert(handle)
            return
        }
        modifyHolders(of: parsed.table.primaryKey) { byKey in
            for key in parsed.positions.keys { byKey[key, default: CompactSet()].insert(handle) }
        }
        filters.add(handle, filters: parsed.query.filters, nonTextColumns: parsed.comparison.nonTextColumns)
    }

    /// Forgets `id`.
    mutating func remove(_ id: String) {
        guard let handle = handles.removeValue(forKey: AnswerID(id)), let entry = kept[handle] else { return }
        revision += 1
        (kept[handle], ids[handle]) = (nil, "")
        freeHandles.append(handle)
        bytes -= entry.bytes
        guard let parsed = entry.parsed else {
            everyChange.remove(handle)
            return
        }
        modifyHolders(of: parsed.table.primaryKey) { byKey in
            for key in parsed.positions.keys { Self.remove(handle, from: key, in: &byKey) }
        }
        filters.remove(handle, filters: parsed.query.filters, nonTextColumns: parsed.comparison.nonTextColumns)
    }

    /// Runs `body` on the holders of the rows keyed by `primaryKey`, in place: one lookup of the
    /// column for all of an answer's rows. A column left with no row is forgotten.
    private mutating func modifyHolders(of primaryKey: String, _ body: (inout [String: CompactSet<Int>]) -> Void) {
        var byKey = holders.removeValue(forKey: primaryKey) ?? [:]
        body(&byKey)
        if !byKey.isEmpty { holders[primaryKey] = byKey }
    }

    /// Room in the holders for the rows of `entries`, about to be set: an app just launched
    /// indexes every answer of the table at once, and grown a key at a time the table of keys
    /// was rehashed at each doubling.
    mutating func reserveHolders(for entries: [Entry]) {
        var rows: [String: Int] = [:]
        for case let parsed? in entries.lazy.map(\.parsed) {
            rows[parsed.table.primaryKey, default: 0] += parsed.positions.count
        }
        for (primaryKey, rows) in rows where rows > 0 {
            var byKey = holders.removeValue(forKey: primaryKey) ?? [:]
            byKey.reserveCapacity(byKey.count + rows)
            holders[primaryKey] = byKey
        }
    }

    /// Takes `handle` out of the holders of `key`'s row, and the row out when none is left.
    private static func remove(_ handle: Int, from key: String, in byKey: inout [String: CompactSet<Int>]) {
        guard let index = byKey.index(forKey: key) else { return }
        byKey.values[index].remove(handle)
        if byKey.values[index].isEmpty { byKey.remove(at: index) }
    }

    /// The slots (``Entry/slot``) of the answers `change` can alter, among those kept, each
    /// once, into `altered` (emptied first: one array serves a page): every-change answers,
    /// holders of its key, and answers it does not hold whose read its new row may match (`row`,
    /// parsed once by the caller; `nil` for a delete or a row that cannot be read).
    mutating func slots(alteredBy change: RowChange, row: JSONObject?, into altered: inout [Int]) {
        changesMet += 1
        let stamp = changesMet
        altered.removeAll(keepingCapacity: true)
        let kept = kept
        func add(_ handle: Int) {
            guard lastFound[handle] != stamp else { return }
            lastFound[handle] = stamp
            if let slot = kept[handle]?.slot { altered.append(slot) }
        }
        everyChange.forEach(add)
        if let row {
            for (primaryKey, byKey) in holders {
                if let key = row[primaryKey] { byKey[OverlayRows.keyText(key)]?.forEach(add) }
            }
            // Not held: an upsert alters an answer only if its row matches the read (a filter the
            // overlay cannot decide counts); the equality filters pass over the answers it cannot.
            // Made for the first answer it is evaluated against: most candidates hold the row
            // already, and were found by its key.
            var asRow: OverlayRows.Row?
            filters.forEachCandidate(for: row) { handle in
                guard lastFound[handle] != stamp else { return }
                let candidate = asRow ?? OverlayRows.Row(values: row, cachedIndex: nil, ordinal: 0)
                asRow = candidate
                switch kept[handle]?.parsed?.readTruth(on: candidate) {
                case .no?, .null?: break
                case .yes?, .unknown?, nil: add(handle)
                }
            }
        } else if change.operation != .delete {
            // An upsert whose row cannot be read counts for every answer.
            kept.indices.forEach { if kept[$0] != nil { add($0) } }
        } else {
            // A delete alters the answers that hold its key.
            for (_, byKey) in holders {
                for key in Self.keyTexts(of: change.key) { byKey[key]?.forEach(add) }
            }
        }
    }

    /// An answer's id, hashed and compared by its UTF-8 bytes.
    struct AnswerID: Hashable {
        let id: String

        init(_ id: String) { self.id = id }

        static func == (lhs: AnswerID, rhs: AnswerID) -> Bool { lhs.id.hasSameUTF8Bytes(as: rhs.id) }

        func hash(into hasher: inout Hasher) {
            id.hashUTF8Bytes(into: &hasher)
        }
    }

    /// The ways a key given as text can be held: as a string, and as a number when it reads as one
    /// (`7` may be a text key or an integer one).
    private static func keyTexts(of key: String) -> [String] {
        var texts = [OverlayRows.keyText(.string(key))]
        if Double(key) != nil { texts.append(OverlayRows.keyText(.number(key))) }
        return texts
    }
}
