/// The parts of a run, each its own table and chart.
enum BenchSection: String, CaseIterable {
    case store
    case eviction
    case cacheOpen = "cache-open"
    case memoryCache = "memory-cache"
    case caller
    case queue
    case fileCache = "file-cache"
    case localFirst = "local-first"
    case writers = "concurrent-writers"
    case objects
    case workload
    case bytes
    case changeFeed = "change-feed"
    case feedWrites = "feed-writes"
    case standbys
    case accounts

    static var allNames: [String] { allCases.map(\.rawValue) }

    var title: String {
        switch self {
        case .store: "Store operations (adapter vs raw C API, same run)"
        case .eviction: "Query cache eviction"
        case .cacheOpen: "Open to first cached read"
        case .memoryCache: "Memory LRU layer vs NSCache"
        case .caller: "Where the call comes from: plain task vs main actor"
        case .queue: "Write queue: enqueue (one durable batch), drain step, open and pending() of 1,000"
        case .fileCache: "File cache: downloads, a pass, open, download latency while passes run"
        case .localFirst: "Local-first reads: a cached 1,000-row list with pending writes overlaid; a live query"
        case .writers: "Concurrent synced writers on one store (group commit): writes per second against one writer"
        case .objects: "Codable objects: ObjectStore against JSONEncoder/Decoder and the byte API by hand, same engine"
        case .workload:
            "YCSB workloads A–F (and traces): every store on one operation stream, the C library on the same"
        case .changeFeed:
            "Change feed: 100 cached answers brought up to date by the feed against refetching them; a page "
                + "per engine beside the store's batch; a live query after another device's write"
        case .feedWrites:
            "Change feed writes: single-row INSERTs and UPDATEs on a published table against the same plain table, "
                + "4 clients and 1, rounds taking turns, the floor of two empty triggers in the same run"
        case .standbys:
            "PostgreSQL reads from two streaming standbys: 16 readers, primary only against each read policy; "
                + "the LSN check of one read; remote_apply against on"
        case .accounts:
            "Accounts: a store's get and set through an account's view, a controller's cached read and offline "
                + "write with an account, each against the same call without one (blocks taking turns)"
        case .bytes:
            "Byte values: set(data:)/data() against a same-length string and against base64 in a string, same run"
        }
    }
}
