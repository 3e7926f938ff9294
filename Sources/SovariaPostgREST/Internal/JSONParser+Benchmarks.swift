/// The overlay's JSON parse, for the benchmark's local-first floor (`sovaria-bench`, in the
/// Benchmarks package): ``JSONParser`` itself stays package, its value type with it.
@_spi(Benchmarks) public enum JSONParserFloor {
    /// Parses `text` as the overlay does and drops the value.
    ///
    /// - Throws: the parser's failure when `text` is not JSON.
    public static func parse(_ text: String) throws {
        _ = try JSONParser.parse(text)
    }
}
