import Foundation
import Testing

@testable import SovariaSodium

@Suite struct Base64URLTests {
    @Test func encodesLikeFoundationWithTheURLSafeAlphabetAndNoPadding() {
        var generator = SystemRandomNumberGenerator()
        for count in 0..<200 {
            let bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let expected = Data(bytes).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
            let encoded = encode(bytes)
            #expect(encoded == expected, "\(count) bytes")
            #expect(decode(encoded) == bytes, "\(count) bytes round trip")
        }
    }

    @Test func rejectsEverythingButAStrictEncoding() {
        #expect(decode("") == [])
        for text in ["A", "AAAAA", "AB", "AAC", "AAAAAB", "AA=A", "AA+A", "AA/A", "AA A", "AA\u{0}A", "AAé"] {
            #expect(decode(text) == nil, "\(text.debugDescription)")
        }
        #expect(decode("AA") == [0])
        #expect(decode("AAE") == [0, 1])
    }

    private func encode(_ bytes: [UInt8]) -> String {
        bytes.withUnsafeBufferPointer { input in
            String(unsafeUninitializedCapacity: Base64URL.encodedCount(of: input.count)) { output in
                Base64URL.encode(input, into: output.baseAddress!)
                return output.count
            }
        }
    }

    private func decode(_ text: String) -> [UInt8]? {
        let characters = Array(text.utf8)
        var output = [UInt8](repeating: 0, count: Base64URL.maxDecodedCount(of: characters.count) + 1)
        let written = characters.withUnsafeBufferPointer { input in
            output.withUnsafeMutableBufferPointer { Base64URL.decode(input, into: $0.baseAddress!) }
        }
        return written.map { Array(output.prefix($0)) }
    }
}
