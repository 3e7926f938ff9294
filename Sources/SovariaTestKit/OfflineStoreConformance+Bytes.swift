import Foundation
import Sovaria
import SovariaPlumbing

extension OfflineStoreConformance {
    /// Byte sequences that are not UTF-8, each for its own reason.
    static let notUTF8: [(name: String, bytes: [UInt8])] = [
        ("FF", [0xFF]),
        ("a lone lead byte C3", [0x61, 0xC3]),
        ("overlong C0 80", [0xC0, 0x80]),
        ("surrogate ED A0 80", [0xED, 0xA0, 0x80]),
        ("past U+10FFFF F4 90 80 80", [0xF4, 0x90, 0x80, 0x80]),
        ("a continuation byte first", [0x80, 0x61]),
    ]

    static let byteChecks: [ConformanceCheck] = [
        ConformanceCheck(
            "bytesKeepEveryByte",
            "set(_:data:) then data(_:), withValue and dataEntries give back every byte: empty, NULs, bytes that are "
                + "not UTF-8, generated binary values. A store without .byteValues refuses bytes that are not UTF-8 "
                + "with .invalidValue and changes nothing."
        ) { context in
            let store = try await context.makeStore().store
            var random = SplitMix(seed: 39)
            var values: [(name: String, bytes: [UInt8])] = [("empty", []), ("NULs", [0, 0, 0x61, 0])] + notUTF8
            for length in [1, 31, 32, 33, 255, 4_096, 70_000] {
                values.append(
                    ("\(length) random bytes", (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) }))
            }
            let takesBytes = store.capabilities.contains(.byteValues)
            var stored: [(key: String, bytes: [UInt8])] = []
            for (index, value) in values.enumerated() {
                let key = String(format: "b%03d", index)
                let isText = String(validating: value.bytes, as: UTF8.self) != nil
                if takesBytes || isText {
                    try await store.set(key, data: Data(value.bytes))
                    stored.append((key, value.bytes))
                } else {
                    try await context.expectError(.invalidValue, "set(data:) of \(value.name) on a text-only store") {
                        try await store.set(key, data: Data(value.bytes))
                    }
                    try context.expect(try await store.data(key) == nil, "a refused \(value.name) left nothing")
                }
            }
            for (key, bytes) in stored {
                try context.expectData(try await store.data(key), bytes, "data(\(key))")
                let seen = try await store.withValue(key) { Array($0) }
                try context.expect(seen == bytes, "withValue(\(key)) saw \(seen.map { "\($0.count) bytes" } ?? "nil")")
            }
            var page: [StoreDataEntry] = []
            var after: String?
            while true {
                let next = try await store.dataEntries("b", after: after, limit: 4)
                page += next
                guard next.count == 4 else { break }
                after = next.last?.key
            }
            try context.expectKeys(page.map(\.key), stored.map(\.key), "dataEntries pages, 4 at a time")
            for (entry, expected) in zip(page, stored) {
                try context.expectData(entry.data, expected.bytes, "dataEntries value of \(entry.key)")
            }
        },
        ConformanceCheck(
            "stringsAndBytesAreOneValue",
            "A string reads back as its UTF-8 bytes; bytes that are UTF-8 read back as that string; each replaces the "
                + "other under one key."
        ) { context in
            let store = try await context.makeStore().store
            let text = "é\u{301}\0😀"
            try await store.set("s", text)
            try context.expectData(try await store.data("s"), Array(text.utf8), "data of a string")
            try await store.set("d", data: Data(text.utf8))
            try context.expectBytes(try await store.get("d"), text, "get of bytes that are UTF-8")
            let entries = try await store.entries("d", after: nil, limit: 5)
            try context.expect(
                entries.count == 1 && entries[0].value.utf8.elementsEqual(text.utf8),
                "entries of bytes that are UTF-8 give the string, got \(entries)")
            try await store.set("d", "now text")
            try context.expectData(try await store.data("d"), Array("now text".utf8), "a string replaces bytes")
            try await store.set("s", data: Data([0x61, 0x62]))
            try context.expectBytes(try await store.get("s"), "ab", "bytes replace a string")
            try await store.set("s", data: Data())
            try context.expectBytes(try await store.get("s"), "", "empty bytes read as \"\", not nil")
        },
        ConformanceCheck(
            "stringReadsOfBytesThrowNotUTF8",
            "With .byteValues, get and entries of a value that is not UTF-8 throw .notUTF8 naming the key, never a "
                + "repaired string; data and dataEntries still read it, and other keys are served."
        ) { context in
            let store = try await context.makeStore().store
            guard store.capabilities.contains(.byteValues) else { return }
            try await store.set("a", "before")
            for (index, value) in notUTF8.enumerated() {
                let key = "n\(index)"
                try await store.set(key, data: Data(value.bytes))
                do {
                    let text = try await store.get(key)
                    throw context.failure("get of \(value.name) returned \(ConformanceContext.show(text))")
                } catch let error as OfflineStoreError {
                    try context.expect(error.code == .notUTF8, "get of \(value.name): expected notUTF8, got \(error)")
                    try context.expect(
                        error.key.map { $0.utf8.elementsEqual(key.utf8) } ?? false,
                        "the error of \(value.name) names the key \(key), got \(error.key ?? "none")")
                }
                try context.expectData(try await store.data(key), value.bytes, "data of \(value.name)")
            }
            try await context.expectError(.notUTF8, "entries over values that are not UTF-8") {
                _ = try await store.entries("n", after: nil, limit: 10)
            }
            let bytes = try await store.dataEntries("n", after: nil, limit: 10)
            try context.expect(
                bytes.count == notUTF8.count, "dataEntries reads all \(notUTF8.count), got \(bytes.count)")
            try context.expectBytes(try await store.get("a"), "before", "another key is still served")
        },
        ConformanceCheck(
            "batchesMixStringsAndBytes",
            "A batch of sets, byte sets and deletes applies in order (the last write of a key wins); an invalid key "
                + "anywhere in it refuses the whole batch."
        ) { context in
            let store = try await context.makeStore().store
            let takesBytes = store.capabilities.contains(.byteValues)
            let binary: [UInt8] = takesBytes ? [0xFF, 0x00, 0xFE] : Array("bin".utf8)
            try await store.set("gone", "x")
            try await store.write([
                .set(key: "k", value: "first"), .setData(key: "k", data: Data(binary)),
                .setData(key: "j", data: Data("j1".utf8)), .set(key: "j", value: "j2"),
                .delete(key: "gone"), .setData(key: "e", data: Data()),
            ])
            try context.expectData(try await store.data("k"), binary, "k: bytes written after a string")
            try context.expectBytes(try await store.get("j"), "j2", "j: a string written after bytes")
            try context.expectData(try await store.data("e"), [], "e: empty bytes")
            try context.expect(try await store.data("gone") == nil, "gone was deleted in the batch")
            let invalid = String(repeating: "x", count: context.factory.maxKeyUTF8Count + 1)
            try await context.expectError(.invalidKey, "a batch with an invalid key after a byte set") {
                try await store.write([
                    .setData(key: "k", data: Data(binary + binary)), .setData(key: invalid, data: Data([1])),
                    .set(key: "j", value: "changed"),
                ])
            }
            try context.expectData(try await store.data("k"), binary, "k unchanged by the refused batch")
            try context.expectBytes(try await store.get("j"), "j2", "j unchanged by the refused batch")
            if !takesBytes {
                try await context.expectError(.invalidValue, "a text-only store's batch with bytes that are not UTF-8")
                {
                    try await store.write([.set(key: "j", value: "changed"), .setData(key: "k", data: Data([0xFF]))])
                }
                try context.expectBytes(try await store.get("j"), "j2", "j unchanged by the refused batch of bytes")
            }
            try await context.expectError(.invalidKey, "set(_:data:) with an empty key") {
                try await store.set("", data: Data([1]))
            }
            try await context.expectError(.invalidKey, "data(_:) of an empty key") { _ = try await store.data("") }
        },
        ConformanceCheck(
            "theLargestGuaranteedValueRoundTrips",
            "A value of StoreValue.maxGuaranteedByteCount (64 MiB) bytes is stored and read back whole."
        ) { context in
            // One at a time in the process: a test run checks dozens of stores at once, and as many
            // synced 64 MiB writes together held every other test's fsync back for minutes.
            try await largeValueGate.withGate { _ in try await largestValueRoundTrip(context) }
        },
        ConformanceCheck(
            "persistentStoresKeepBytesAcrossReopen",
            "A persistent store, opened again, reads every byte value as written."
        ) { context in
            let folder = try context.makeFolder()
            let values: [(String, [UInt8])] = [("e", []), ("n", [0, 0xFF, 0xC3]), ("t", Array("text".utf8))]
            do {
                let store = try await context.factory.open(folder)
                guard store.isPersistent else { return }
                let takesBytes = store.capabilities.contains(.byteValues)
                for (key, bytes) in values where takesBytes || String(validating: bytes, as: UTF8.self) != nil {
                    try await store.set(key, data: Data(bytes))
                }
            }  // released here, so the next open is a real reopen
            let store = try await context.factory.open(folder)
            let takesBytes = store.capabilities.contains(.byteValues)
            for (key, bytes) in values where takesBytes || String(validating: bytes, as: UTF8.self) != nil {
                try context.expectData(try await store.data(key), bytes, "data(\(key)) after reopen")
            }
        },
    ]
}

extension OfflineStoreConformance {
    /// The tag of the gate the largest-value checks go through one at a time.
    enum LargeValues {}

    static let largeValueGate = AsyncGate<LargeValues>()

    /// Stores and reads back a value of ``StoreValue/maxGuaranteedByteCount`` bytes: generated
    /// bytes on a store with byte values, letters on a store of text.
    static func largestValueRoundTrip(_ context: ConformanceContext) async throws {
        let store = try await context.makeStore().store
        let value =
            store.capabilities.contains(.byteValues)
            ? largestBinaryValue : Data(repeating: 0x61, count: StoreValue.maxGuaranteedByteCount)
        try await store.set("large", data: value)
        let read = try await store.data("large")
        try context.expect(read?.count == value.count, "read \(read?.count ?? -1) of \(value.count) bytes")
        try context.expect(read == value, "the 64 MiB value reads back byte for byte")
        try await store.delete("large")
    }

    /// ``StoreValue/maxGuaranteedByteCount`` generated bytes, made once per process.
    static let largestBinaryValue: Data = {
        var random = SplitMix(seed: 64)
        var value = Data(count: StoreValue.maxGuaranteedByteCount)
        value.withUnsafeMutableBytes { buffer in
            for offset in stride(from: 0, to: buffer.count, by: 8) {
                buffer.storeBytes(of: random.next(), toByteOffset: offset, as: UInt64.self)
            }
        }
        return value
    }()
}

extension ConformanceContext {
    /// Throws unless `actual` holds exactly the bytes `expected` (`nil` for none).
    public func expectData(_ actual: Data?, _ expected: [UInt8]?, _ what: @autoclosure () -> String) throws {
        let same = actual.map { Array($0) } == expected
        try expect(
            same,
            "\(what()): expected \(expected.map { "\($0.count) bytes" } ?? "nil"), got "
                + "\(actual.map { "\($0.count) bytes\($0.count <= 16 ? " \(Array($0))" : "")" } ?? "nil")")
    }
}
