import Foundation

/// How ``ObjectStore`` turns objects into the bytes it stores, and back: ``JSONObjectCoder``
/// (``json``, the default) or ``PropertyListObjectCoder`` (``propertyList``), or your own.
///
/// - Important: A coder must be safe to call from any task at once, and must read back what it
///   wrote. Changing the coder of a collection that has objects makes them undecodable: migrate
///   them (``ObjectStore/migrate(toVersion:pageSize:_:)``) instead.
public protocol ObjectCoder: Sendable {
    /// The bytes that stand for `value`.
    ///
    /// - Parameter value: The object to encode.
    func encode<Value: Encodable>(_ value: Value) throws -> Data

    /// The object of type `type` that `data` stands for.
    ///
    /// - Parameters:
    ///   - type: The type to decode.
    ///   - data: Bytes this coder wrote.
    func decode<Value: Decodable>(_ type: Value.Type, from data: Data) throws -> Value
}

/// Objects as JSON (UTF-8), with Foundation's `JSONEncoder` and `JSONDecoder`: readable in a dump,
/// and stored as text, so every store takes it.
public struct JSONObjectCoder: ObjectCoder {
    /// Whether object keys are written sorted: the same object then always gives the same bytes.
    /// Default: `false`.
    public let sortsKeys: Bool
    /// One encoder and one decoder for every call: Foundation's are safe to share between tasks.
    private let encoder: JSONEncoder
    private let decoder = JSONDecoder()

    /// A JSON coder; `sortsKeys` sorts the objects' keys. Dates use `JSONEncoder`'s default form
    /// (seconds since 2001 as a number), which reads back exactly.
    ///
    /// - Parameter sortsKeys: Whether object keys are written in sorted order. Default: `false`.
    public init(sortsKeys: Bool = false) {
        self.sortsKeys = sortsKeys
        encoder = JSONEncoder()
        if sortsKeys { encoder.outputFormatting = [.sortedKeys] }
    }

    /// The object as JSON.
    ///
    /// - Parameter value: The object to encode.
    public func encode<Value: Encodable>(_ value: Value) throws -> Data {
        try encoder.encode(value)
    }

    /// The object the JSON `data` stands for.
    ///
    /// - Parameters:
    ///   - type: The type to decode.
    ///   - data: JSON this coder wrote.
    public func decode<Value: Decodable>(_ type: Value.Type, from data: Data) throws -> Value {
        try decoder.decode(type, from: data)
    }
}

/// Objects as binary property lists, with Foundation's `PropertyListEncoder`: smaller and faster
/// to read than JSON for numbers and dates.
///
/// - Important: A binary property list is not UTF-8: it needs a store with byte values
///   (`StoreCapabilities.byteValues`). A store of text only refuses it with `OfflineStoreError`
///   code `.invalidValue`, and nothing is written.
public struct PropertyListObjectCoder: ObjectCoder {
    /// A binary property list coder.
    public init() {}

    /// The object as a binary property list.
    ///
    /// - Parameter value: The object to encode.
    public func encode<Value: Encodable>(_ value: Value) throws -> Data {
        let encoder = PropertyListEncoder()
        encoder.outputFormat = .binary
        return try encoder.encode(value)
    }

    /// The object the property list `data` stands for.
    ///
    /// - Parameters:
    ///   - type: The type to decode.
    ///   - data: A property list this coder wrote.
    public func decode<Value: Decodable>(_ type: Value.Type, from data: Data) throws -> Value {
        try PropertyListDecoder().decode(type, from: data)
    }
}

extension ObjectCoder where Self == JSONObjectCoder {
    /// JSON, keys in the encoder's order: the default coder.
    public static var json: JSONObjectCoder { JSONObjectCoder() }
}

extension ObjectCoder where Self == PropertyListObjectCoder {
    /// Binary property lists.
    public static var propertyList: PropertyListObjectCoder { PropertyListObjectCoder() }
}
