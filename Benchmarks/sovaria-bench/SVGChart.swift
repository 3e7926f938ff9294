import Foundation

/// Draws the picture a person reads to choose an engine: first an overview, one panel per
/// operation with the engines side by side (one colour each) and the C program's time marked on
/// each store operation's bar; then one horizontal bar chart per section with every row: a bar per row, its length
/// the time per item on a logarithmic axis (operations differ by orders of magnitude), labelled
/// with its value.
enum SVGChart {
    static let labelWidth = 430.0
    static let plotWidth = 560.0
    static let rowHeight = 18.0
    static let palette = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f"]

    static func render(_ report: Report) -> String {
        var body = ""
        var top = 40.0
        let sections = BenchSection.allCases.filter { section in
            report.measurements.contains { $0.section == section.rawValue }
        }
        var subjects: [String] = []
        for row in report.measurements where !subjects.contains(family(row.subject)) {
            subjects.append(family(row.subject))
        }
        let overview = Overview(report: report, subjects: subjects, top: top)
        body += overview.svg
        top = overview.bottom + 30
        for section in sections {
            let rows = report.measurements.filter { $0.section == section.rawValue }
            let title = section == .workload ? WorkloadReport.sectionTitle(rows) : section.title
            body += chart(title, rows, top: top, subjects: subjects)
            top += 70 + Double(rows.count) * rowHeight + 40
        }
        let width = labelWidth + plotWidth + 120
        return """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(top))" \
            font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="11">
            <rect width="100%" height="100%" fill="white"/>
            <text x="10" y="22" font-size="15" font-weight="bold">Sovaria benchmark</text>
            <text x="10" y="36" font-size="10" fill="#555">\(escape(report.header))</text>
            \(body)</svg>
            """
    }

    /// The colour of `subject`'s family (an engine and its baselines share one).
    static func color(_ subject: String, among subjects: [String]) -> String {
        palette[(subjects.firstIndex(of: family(subject)) ?? 0) % palette.count]
    }

    private static func chart(_ title: String, _ rows: [Measurement], top: Double, subjects: [String]) -> String {
        let values = rows.map(\.nanosecondsPerOp).filter { $0 > 0 }
        let low = pow(10, floor(log10(values.min() ?? 1)))
        let high = pow(10, ceil(log10(max(values.max() ?? 10, low * 10))))
        func x(_ value: Double) -> Double {
            labelWidth + plotWidth * (log10(max(value, low)) - log10(low)) / (log10(high) - log10(low))
        }
        let plotTop = top + 40
        let plotBottom = plotTop + Double(rows.count) * rowHeight
        var svg = "<text x=\"10\" y=\"\(top + 22)\" font-size=\"13\" font-weight=\"bold\">\(escape(title))</text>\n"
        var tick = low
        while tick <= high * 1.0001 {
            let position = x(tick)
            svg +=
                "<line x1=\"\(position)\" y1=\"\(plotTop - 4)\" x2=\"\(position)\" y2=\"\(plotBottom)\" stroke=\"#ddd\"/>"
            svg += "<text x=\"\(position)\" y=\"\(plotBottom + 14)\" text-anchor=\"middle\" fill=\"#444\">"
            svg += "\(Report.duration(tick))</text>\n"
            tick *= 10
        }
        svg +=
            "<text x=\"\(labelWidth + plotWidth / 2)\" y=\"\(plotBottom + 30)\" text-anchor=\"middle\" fill=\"#222\">"
        svg += "time per operation (log scale; shorter is faster)</text>\n"
        for (position, row) in rows.enumerated() {
            let y = plotTop + Double(position) * rowHeight
            let color = color(row.subject, among: subjects)
            let label = [row.subject, row.variant, row.operation].filter { !$0.isEmpty }.joined(separator: " · ")
            let end = x(row.nanosecondsPerOp)
            svg += "<text x=\"\(labelWidth - 6)\" y=\"\(y + 12)\" text-anchor=\"end\">\(escape(label))</text>"
            svg += "<rect x=\"\(labelWidth)\" y=\"\(y + 2)\" width=\"\(max(1, end - labelWidth))\" "
            svg += "height=\"\(rowHeight - 4)\" fill=\"\(color)\"/>"
            var text = Report.duration(row.nanosecondsPerOp)
            if let ratio = row.ratio { text += String(format: "  (%.2fx)", ratio) }
            svg += "<text x=\"\(end + 4)\" y=\"\(y + 12)\" fill=\"#222\">\(escape(text))</text>\n"
        }
        svg +=
            "<line x1=\"\(labelWidth)\" y1=\"\(plotTop - 4)\" x2=\"\(labelWidth)\" y2=\"\(plotBottom)\" stroke=\"#333\"/>\n"
        return svg
    }

    /// Colours group a subject with its raw baseline: `raw sqlite` and `sqlite` are told apart
    /// by label, and engines by colour; each wrapper (`encrypted(…)`, `checksummed(…)`) has
    /// one colour of its own.
    static func family(_ subject: String) -> String {
        var name = subject
        if name.hasPrefix("raw ") { name.removeFirst(4) }
        if name.hasPrefix("C ") { name.removeFirst(2) }
        if name.hasPrefix("encrypted(") { return "encrypted" }
        if name.hasPrefix("checksummed(") { return "checksummed" }
        return name
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
    }
}
