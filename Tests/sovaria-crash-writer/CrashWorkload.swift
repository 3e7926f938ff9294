import Sovaria

/// What the crash writer writes for each index, so the test can tell whole from torn.
enum CrashWorkload {
    static func singleKey(_ index: Int) -> String { "sov:crash:n:\(padded(index))" }
    static func batchKeys(_ index: Int) -> (String, String) {
        ("sov:crash:b:\(padded(index)):a", "sov:crash:b:\(padded(index)):b")
    }

    /// A value of 100 B to 16 KiB whose every part depends on `index`, so a torn write shows.
    static func value(_ index: Int) -> String {
        let length = 100 + (index * 7_919) % 16_284
        let unit = "\(index)|é|"
        return String(repeating: unit, count: length / unit.utf8.count + 1)
    }

    static func batch(_ index: Int) -> [StoreWrite] {
        let (a, b) = batchKeys(index)
        return [.set(key: a, value: value(index + 1_000_000)), .set(key: b, value: value(index + 1_000_000))]
    }

    static func padded(_ index: Int) -> String {
        let digits = String(index)
        return String(repeating: "0", count: max(0, 9 - digits.count)) + digits
    }
}
