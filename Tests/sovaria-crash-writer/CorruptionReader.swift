import Foundation
import Sovaria

/// The child of the corruption tests (`Tests/SovariaFaultTests/CorruptionMatrixTests.swift`): opens
/// a store whose files a test damaged and reads every key, in a process of its own, so that a C
/// library that crashes on damage (LMDB may) kills this child, not the test runner.
///
/// Usage: `sovaria-crash-writer read-ENGINE PATH synced COUNT` (ENGINE may be
/// `checksummed-<engine>`). Reads `sov:k:1000` …
/// `sov:k:<999 + COUNT>` one by one, then every entry in one scan, and prints one line per result,
/// every key and value in lowercase hex (damage may put any byte there):
///
/// ```
/// open-error <code> <message>          (nothing else follows)
/// get <index> value <hex value> | get <index> nil | get <index> error <code> <message>
/// scan <hex key> <hex value> … | scan-error <code> <message>
/// done
/// ```
enum CorruptionReader {
    static let enginePrefix = "read-"
    /// `read-checksummed-<engine>` reads through ``ChecksummedOfflineStore``.
    static let checksummedPrefix = "checksummed-"

    static func run(engine: String, path: String, count: Int) async -> Never {
        let store: any OfflineStore
        do {
            if engine.hasPrefix(checksummedPrefix) {
                store = ChecksummedOfflineStore(
                    wrapping: try await CrashStores.open(
                        String(engine.dropFirst(checksummedPrefix.count)), at: URL(fileURLWithPath: path),
                        durability: .synced))
            } else {
                store = try await CrashStores.open(engine, at: URL(fileURLWithPath: path), durability: .synced)
            }
        } catch {
            print(line("open-error", error))
            exit(0)
        }
        for index in 0..<count {
            do {
                // As bytes: a value damaged into bytes that are not UTF-8 is a changed value, which a
                // string read would report as .notUTF8 instead.
                if let value = try await store.data("sov:k:\(1_000 + index)") {
                    print("get \(index) value \(hex(value))")
                } else {
                    print("get \(index) nil")
                }
            } catch {
                print(line("get \(index) error", error))
            }
        }
        do {
            var after: String?
            while true {
                let page = try await store.dataEntries("", after: after, limit: 500)
                for entry in page { print("scan \(hex(entry.key)) \(hex(entry.data))") }
                guard page.count == 500 else { break }
                after = page.last?.key
            }
        } catch {
            print(line("scan-error", error))
        }
        print("done")
        exit(0)
    }

    /// `prefix`, the error's code and its message on one line.
    private static func line(_ prefix: String, _ error: any Error) -> String {
        let code = (error as? OfflineStoreError).map { "\($0.code)" } ?? "foreign"
        let message = (error as? OfflineStoreError)?.message ?? "\(error)"
        return "\(prefix) \(code) \(message.replacingOccurrences(of: "\n", with: " "))"
    }

    private static func hex(_ string: String) -> String { hex(Data(string.utf8)) }

    private static func hex(_ bytes: Data) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0xF)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
