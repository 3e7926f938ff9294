import SovariaPlumbing
import Testing

@testable import Sovaria

@Suite struct StoreKeyTests {
    @Test func validatesByUTF8Length() throws {
        try StoreKey.validate("k")
        try StoreKey.validate(String(repeating: "é", count: 255) + "k")
        #expect(throws: OfflineStoreError.self) { try StoreKey.validate("") }
        #expect(throws: OfflineStoreError.self) { try StoreKey.validate(String(repeating: "é", count: 256)) }
        do {
            try StoreKey.validate("")
        } catch {
            #expect(error.code == .invalidKey)
            #expect(error.key == "")
        }
    }

    @Test func successorIsTheExclusiveUpperBoundOfAPrefix() {
        #expect(StoreKey.successor(ofPrefix: Array("ab".utf8)) == Array("ac".utf8))
        #expect(StoreKey.successor(ofPrefix: [0x61, 0xFF, 0xFF]) == [0x62])
        #expect(StoreKey.successor(ofPrefix: [0xFF]) == nil)
        #expect(StoreKey.successor(ofPrefix: [UInt8]()) == nil)
    }

    @Test func ordersAndPrefixesByBytes() {
        #expect(StoreKey.Bytes("\u{FFFD}") < StoreKey.Bytes("\u{10000}"))  // UTF-16 order says the opposite
        #expect(StoreKey.Bytes("e\u{301}") != StoreKey.Bytes("\u{E9}"))
        #expect(StoreKey.hasBytePrefix("e\u{301}x", "e"))
        #expect(!StoreKey.hasBytePrefix("\u{E9}", "e"))
    }

    @Test func journalRoundTripsAndRejectsDamage() {
        let batch: [BatchJournal.Step] = [
            .rename(stagedName: ".tmp-1", key: "a\0"), .remove(key: "é"), .rename(stagedName: ".tmp-2", key: "k"),
        ]
        let bytes = BatchJournal.encode(batch)
        #expect(BatchJournal.decode(bytes) == batch)
        #expect(BatchJournal.decode(Array(bytes.dropLast())) == nil)
        var flipped = bytes
        flipped[8] ^= 1
        #expect(BatchJournal.decode(flipped) == nil)
    }

    @Test func fileNamesKeepByteOrderAndFitTheNameLimit() {
        let keys = ["a", "a\0", "ab", "\u{E9}", String(repeating: "z", count: 511), "\u{10FFFF}"]
        for key in keys {
            let (folders, file) = FileNameScheme.path(for: key)
            #expect((folders + [file]).allSatisfy { $0.utf8.count <= 255 })
            let digits = folders.flatMap { Array($0.utf8.dropFirst()) } + Array(file.utf8.dropFirst())
            #expect(FileNameScheme.decodeKey(digits).map { Array($0.utf8) } == Array(key.utf8))
        }
    }
}

@Suite struct UTF8BytesTests {
    func text(_ bytes: [UInt8]) -> String? {
        bytes.withUnsafeBufferPointer { String(validatingUTF8Bytes: $0) }
    }

    @Test func comparesByBytesNotByUnicodeEquivalence() {
        let pairs: [(String, String, Int)] = [
            ("", "", 0), ("a", "a", 0), ("a", "b", -1), ("b", "a", 1), ("a", "ab", -1), ("ab", "a", 1),
            ("a\0b", "a\0c", -1), ("a\0", "a", 1), ("Z", "a", -1),
            ("\u{E9}", "e\u{301}", 1),  // equal as Strings, two byte sequences (0xC3 > 0x65)
        ]
        for (a, b, sign) in pairs {
            #expect(a.compareUTF8Bytes(with: b).signum() == sign, "\(Array(a.utf8)) against \(Array(b.utf8))")
        }
        let shared = String(repeating: "x", count: 100)
        #expect(shared.compareUTF8Bytes(with: shared) == 0)
    }

    @Test func sameBytesAreTheSameWhereverTheStringsKeepThem() {
        // Short strings are held in the string itself, long ones in storage; a copy made from the
        // bytes is another storage with the same bytes.
        for same in [
            "", "items", "é", "\u{E9}t\u{E9}", "exactly15 bytes", "sixteen bytes!!!",
            String(repeating: "k", count: 100),
        ] {
            let copy = text(Array(same.utf8))!
            #expect(
                same.hasSameUTF8Bytes(as: same) && same.hasSameUTF8Bytes(as: copy) && copy.hasSameUTF8Bytes(as: same))
        }
        let different: [(String, String)] = [
            ("a", "b"), ("items", "itemz"), ("a", "ab"), ("abcdefgh1", "abcdefgh2"), ("é", "è"), ("\u{E9}", "e\u{301}"),
            ("\u{E9}x", "e\u{301}"),
            (String(repeating: "k", count: 100), String(repeating: "k", count: 99) + "K"),
            (String(repeating: "k", count: 16), String(repeating: "k", count: 17)),
        ]
        for (a, b) in different {
            #expect(
                !a.hasSameUTF8Bytes(as: b) && !b.hasSameUTF8Bytes(as: a), "\(Array(a.utf8)) against \(Array(b.utf8))")
        }
    }

    @Test func acceptsValidUTF8AndRejectsEveryKindOfInvalidByte() {
        #expect(text([]) == "")
        #expect(text(Array("a\0é😀\u{FFFD}".utf8)).map { Array($0.utf8) } == Array("a\0é😀\u{FFFD}".utf8))
        #expect(text([0x61, 0xFF]) == nil)  // never valid
        #expect(text([0xC3]) == nil)  // cut short
        #expect(text([0xC0, 0xAF]) == nil)  // overlong
        #expect(text([0xED, 0xA0, 0x80]) == nil)  // a surrogate
        #expect(text([0xEF, 0xBF, 0xBD, 0x80]) == nil)  // a stray continuation after a real U+FFFD
    }
}
