/// One page of a collection in key order, as ``ObjectStore/page(after:limit:skippingUndecodable:)``
/// returns it: the objects, the ones that could not be decoded, and where the next page starts.
public struct ObjectPage<Object: Sendable>: Sendable {
    /// The objects of the page, in key order.
    public var objects: [Object]
    /// The id of each object in ``objects``, in the same order.
    public var ids: [String]
    /// The objects of the page that could not be decoded, each an ``ObjectStoreError`` with code
    /// ``ObjectStoreError/Code/decodingFailed``, its id and key; always empty for a strict read.
    public var failures: [ObjectStoreError]
    /// The id to pass as `after` to read the next page; `nil` when this page is the last.
    ///
    /// - Important: A page with as many entries as its limit always has a cursor, so the page
    ///   after it may be empty.
    public var next: String?

    /// A page.
    ///
    /// - Parameters:
    ///   - objects: The objects, in key order.
    ///   - ids: The id of each object.
    ///   - failures: The entries that could not be decoded.
    ///   - next: The cursor of the next page, `nil` for the last.
    public init(objects: [Object], ids: [String], failures: [ObjectStoreError], next: String?) {
        self.objects = objects
        self.ids = ids
        self.failures = failures
        self.next = next
    }
}
