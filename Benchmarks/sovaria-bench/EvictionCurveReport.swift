import Foundation
import SovariaWorkloads

/// The miss-ratio curve of one request stream on every store, and each store's eviction costs:
/// printed, written as JSON or Markdown, drawn as SVG.
struct EvictionCurveReport: Codable {
    /// One store at one bound, beside the same store with eviction off.
    struct Point: Codable {
        var store: String
        var boundPercent: Double
        var boundBytes: Int
        var hitRatio: Double
        var byteHitRatio: Double
        var hits: Int
        var passes: Int
        var evictedResponses: Int
        var evictedBytes: Int
        /// A missed read's p50 and p99 (fetch from the stub and put) with this bound, and with
        /// eviction off on the same stream.
        var missP50Nanoseconds: Double
        var missP99Nanoseconds: Double
        var missP99UnboundedNanoseconds: Double

        init(store: String, boundPercent: Double, point: EvictionCurvePoint, unbounded: EvictionCurvePoint) {
            self.store = store
            self.boundPercent = boundPercent
            boundBytes = point.boundBytes ?? 0
            hitRatio = point.hitRatio
            byteHitRatio = point.byteHitRatio
            hits = point.hits
            passes = point.passes
            evictedResponses = point.evictedResponses
            evictedBytes = point.evictedBytes
            missP50Nanoseconds = Double(point.missLatency.p50)
            missP99Nanoseconds = Double(point.missLatency.p99)
            missP99UnboundedNanoseconds = Double(unbounded.missLatency.p99)
        }

        /// The miss p99 with eviction over without it.
        var evictionCost: Double { missP99Nanoseconds / max(missP99UnboundedNanoseconds, 1) }
    }

    var machine: [String: String]
    var requests: Int
    var keys: Int
    /// The bytes the distinct keys' bodies take as stored (each capped at
    /// ``EvictionCurve/maxBodyBytes``): what the bounds are percents of.
    var workingSetBytes: Int
    /// Requests, and distinct keys, whose size was over ``EvictionCurve/maxBodyBytes``: stored at
    /// that size, so the curve is the one of the trace with its objects capped.
    var cappedRequests = 0
    var cappedKeys = 0
    var points: [Point]

    /// The bounds (percent) at which the stores had different hits, ascending; empty when every
    /// store had the same hits at every bound, as the curve depends on the policy and the stream,
    /// not the engine.
    var boundsWhereHitsDiffer: [Double] {
        Dictionary(grouping: points, by: \.boundPercent).filter { Set($0.value.map(\.hits)).count > 1 }.keys.sorted()
    }

    var isEngineIndependent: Bool { boundsWhereHitsDiffer.isEmpty }

    /// The line saying which requests were capped, or `nil` when none was.
    var cappedNote: String? {
        guard cappedRequests > 0 else { return nil }
        let cap = "\(EvictionCurve.maxBodyBytes >> 20) MiB"
        return "\(cappedRequests) requests for \(cappedKeys) objects larger than \(cap) were stored as \(cap) "
            + "(a point's largest body): the working set and the bounds count the stored bytes, so this is the curve "
            + "of the trace with its objects capped, not the one libCacheSim draws from the trace as it is."
    }

    func table(markdown: Bool) -> [String] {
        var lines: [String] = []
        let header =
            "\(requests) requests for \(keys) keys, working set \(WorkloadReport.bytes(workingSetBytes)) · "
            + machine.keys.sorted().map { "\($0): \(machine[$0] ?? "")" }.joined(separator: " · ")
        lines += markdown ? ["# Eviction under one request stream", "", header, ""] : [header, ""]
        if let cappedNote { lines += [cappedNote, ""] }
        let stores = points.reduce(into: [String]()) { if !$0.contains($1.store) { $0.append($1.store) } }
        let first = points.filter { $0.store == stores.first }
        lines += markdown ? ["## The curve (the same on every store)", ""] : ["The curve (the same on every store):"]
        lines += WorkloadReport.render(
            ["bound", "bytes", "hit ratio", "miss ratio", "byte hit ratio"],
            first.map {
                [
                    String(format: "%g%%", $0.boundPercent), WorkloadReport.bytes($0.boundBytes),
                    String(format: "%.3f", $0.hitRatio), String(format: "%.3f", 1 - $0.hitRatio),
                    String(format: "%.3f", $0.byteHitRatio),
                ]
            }, markdown: markdown, rightAligned: 1...4)
        lines.append("")
        lines.append(
            isEngineIndependent
                ? "Every store had the same hits at every bound."
                : "The stores' hits differ at "
                    + boundsWhereHitsDiffer.map { String(format: "%g%%", $0) }.joined(separator: ", ")
                    + ": the curve must not depend on the engine (a defect; the command fails).")
        lines.append("")
        lines += markdown ? ["## What eviction costs each store", ""] : ["What eviction costs each store:"]
        lines += WorkloadReport.render(
            ["store", "bound", "passes", "responses evicted", "bytes evicted", "miss p50", "miss p99", "p99 on/off"],
            points.map {
                [
                    $0.store, String(format: "%g%%", $0.boundPercent), "\($0.passes)", "\($0.evictedResponses)",
                    WorkloadReport.bytes($0.evictedBytes), Report.duration($0.missP50Nanoseconds),
                    Report.duration($0.missP99Nanoseconds), String(format: "%.2fx", $0.evictionCost),
                ]
            }, markdown: markdown, rightAligned: 2...7)
        return lines
    }

    /// The miss ratio over the bound (percent of the working set, log scale): one line.
    func svg() -> String {
        let width = 640.0
        let height = 400.0
        let left = 60.0
        let top = 40.0
        let plotWidth = width - left - 30
        let plotHeight = height - top - 60
        let stores = points.reduce(into: [String]()) { if !$0.contains($1.store) { $0.append($1.store) } }
        let first = points.filter { $0.store == stores.first }
        let percents = first.map(\.boundPercent)
        let low = log10(percents.min() ?? 1)
        let high = log10(max(percents.max() ?? 100, (percents.min() ?? 1) * 10))
        func x(_ percent: Double) -> Double { left + (log10(percent) - low) / max(high - low, 1e-9) * plotWidth }
        func y(_ ratio: Double) -> Double { top + (1 - ratio) * plotHeight }
        var body = ""
        for tick in stride(from: 0.0, through: 1.0, by: 0.25) {
            body +=
                "<line x1=\"\(left)\" y1=\"\(y(tick))\" x2=\"\(left + plotWidth)\" y2=\"\(y(tick))\" stroke=\"#ddd\"/>"
            body +=
                "<text x=\"\(left - 8)\" y=\"\(y(tick) + 4)\" text-anchor=\"end\">\(String(format: "%.2f", tick))</text>"
        }
        for percent in percents {
            body +=
                "<text x=\"\(x(percent))\" y=\"\(top + plotHeight + 16)\" text-anchor=\"middle\">"
                + String(format: "%g%%", percent) + "</text>"
        }
        let path = first.map { "\(x($0.boundPercent)),\(y(1 - $0.hitRatio))" }.joined(separator: " ")
        body += "<polyline points=\"\(path)\" fill=\"none\" stroke=\"#4e79a7\" stroke-width=\"2\"/>"
        for point in first {
            body += "<circle cx=\"\(x(point.boundPercent))\" cy=\"\(y(1 - point.hitRatio))\" r=\"3\" fill=\"#4e79a7\"/>"
        }
        return """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" \
            font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="11">
            <rect width="100%" height="100%" fill="white"/>
            <text x="10" y="22" font-size="14" font-weight="bold">Miss ratio by cache bound \
            (\(requests) requests, \(keys) keys, the same on \(stores.joined(separator: ", ")))</text>
            \(body)
            <text x="\(left + plotWidth / 2)" y="\(height - 16)" text-anchor="middle">bound, % of the working set \
            (\(SVGChart.escape(WorkloadReport.bytes(workingSetBytes))))</text>
            <text x="16" y="\(top + plotHeight / 2)" transform="rotate(-90 16 \(top + plotHeight / 2))" \
            text-anchor="middle">miss ratio</text>
            </svg>
            """
    }
}
