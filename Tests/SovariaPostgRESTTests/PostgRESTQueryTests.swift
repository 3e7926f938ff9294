import Foundation
import Testing

@testable import SovariaPostgREST

/// Taking a read's query apart: at bytes, as PostgREST does, with the column and whitespace rules
/// Foundation's character walks gave before.
@Suite struct PostgRESTQueryTests {
    @Test func aQueryIsSplitAtItsAmpersandsAndFirstEqualsSign() {
        let query = PostgRESTQuery(path: "/rest/v1/items?select=id,name&qty=eq.a=b&&order=id.desc&limit=3")
        #expect(query.columns == ["id", "name"])
        #expect(query.filters.map(\.column) == ["qty"])
        #expect(query.filters.map(\.operand) == ["a=b"])
        #expect(query.order.map(\.column) == ["id"])
        #expect(query.order.map(\.descending) == [true])
        #expect(query.limit == 3)
        #expect(query.unsupported.isEmpty)
        #expect(PostgRESTQuery(path: "/rest/v1/items").filters.isEmpty)
        // A name without `=` has an empty value: PostgREST's parse error for a filter.
        #expect(!PostgRESTQuery(path: "/rest/v1/items?qty").unsupported.isEmpty)
    }

    /// A `&` followed by a combining mark is one Character to Swift and still a separator to
    /// PostgREST, which splits the query's bytes.
    @Test func anAmpersandACombiningMarkFollowsStillSeparates() {
        let query = PostgRESTQuery(path: "/rest/v1/items?qty=eq.1&\u{301}name=eq.x")
        #expect(query.filters.map(\.column) == ["qty", "\u{301}name"])
        #expect(query.filters.first?.operand == "1")
    }

    @Test func aPlainColumnHasNoAliasCastPathOrEmbedding() {
        for plain in ["id", "field-with_sep", "a-b-c", "é", "x>y", "-", ">"] {
            #expect(PostgRESTQuery.isPlainColumn(plain), "\(plain)")
        }
        for notPlain in ["", "a:b", "a::text", "f(x)", "a!inner", "*", "data->key", "data->>key", "or", "and", "not"] {
            #expect(!PostgRESTQuery.isPlainColumn(notPlain), "\(notPlain)")
        }
    }

    /// The fast path answers as Foundation's `trimmingCharacters(in: .whitespaces)` does, for
    /// ASCII ends and for the Unicode spaces it asks Foundation about.
    @Test func whitespaceIsTrimmedAsFoundationTrimsIt() {
        let texts = [
            "id", " id", "id ", "\tid\t", "  ", "", "\u{A0}id", "id\u{3000}", "é", "\u{301}", "a b", "\nid\n",
            "id\u{2003}",
        ]
        for text in texts {
            #expect(
                PostgRESTQuery.trimmingWhitespace(Substring(text)) == text.trimmingCharacters(in: .whitespaces),
                "\(text.debugDescription)")
        }
        #expect(PostgRESTQuery(path: "/rest/v1/items?select=%20id%20,name").columns == ["id", "name"])
    }
}
