/// A set that holds its first element inline and only the others in a `Set`: most rows are held
/// by one cached answer, so ``TableReach``'s index of the rows its answers hold allocates nothing
/// for them (an app just launched indexes every answer at its first page, one set per row it
/// holds). `EqualityIndex` keeps `Set`: it reads its sets for every change, and copying this one
/// out of a dictionary cost more than it saved.
struct CompactSet<Element: Hashable> {
    /// The element held inline; `nil` only when the set is empty.
    private var first: Element?
    /// The other elements (a `Set` never given one allocates nothing).
    private var rest: Set<Element> = []

    /// An empty set.
    init() {}

    var isEmpty: Bool { first == nil }

    var count: Int { first == nil ? 0 : 1 + rest.count }

    /// Adds `element`, unless the set holds it.
    mutating func insert(_ element: Element) {
        guard let first else {
            self.first = element
            return
        }
        if first != element { rest.insert(element) }
    }

    /// Takes out `element`, if the set holds it.
    mutating func remove(_ element: Element) {
        if first == element {
            first = rest.popFirst()
        } else {
            rest.remove(element)
        }
    }

    /// Calls `body` with each element, once.
    func forEach(_ body: (Element) -> Void) {
        guard let first else { return }
        body(first)
        rest.forEach(body)
    }
}
