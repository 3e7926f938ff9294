import Foundation

extension SVGChart {
    /// The overview at the top of the chart: a panel per operation, two panels a line, a bar per
    /// engine (its `.flushed` variant where it has one), the bar's length the median time on a
    /// log axis with units, and, on the store operations' panels, a black tick where the C
    /// program's median for the same operation falls (it runs no cache or eviction workload).
    struct Overview {
        /// One panel: a title and how to pick each engine's row and figure.
        struct Panel: Sendable {
            /// The panel's heading.
            var title: String
            /// The section its rows come from.
            var section: BenchSection
            /// Whether a row's operation is the panel's.
            var operation: @Sendable (String) -> Bool
            /// The figure a row's bar shows, in nanoseconds.
            var figure: @Sendable (Measurement) -> Double
            /// Whether the bar's label carries the row's note (the workload differs by engine).
            var showsNote = false
        }

        /// A panel's width, two a line.
        static let panelWidth = 540.0
        /// The width of the engine names left of the bars.
        static let panelLabelWidth = 130.0
        /// One engine's line.
        static let barHeight = 16.0

        /// The panels, in reading order.
        static let panels: [Panel] = [
            Panel(title: "get, random hit (p50)", section: .store, operation: { $0 == "get (random hit)" }) {
                $0.p50Nanoseconds
            },
            Panel(title: "single set (p50)", section: .store, operation: { $0 == "set (single)" }) {
                $0.p50Nanoseconds
            },
            Panel(title: "batched set, per key", section: .store, operation: { $0.hasPrefix("set (batch") }) {
                $0.nanosecondsPerOp
            },
            Panel(title: "keys(prefix) of 100 (p50)", section: .store, operation: { $0.hasPrefix("keys(prefix)") }) {
                $0.p50Nanoseconds
            },
            Panel(title: "batched delete, per key", section: .store, operation: { $0.hasPrefix("delete (batch") }) {
                $0.nanosecondsPerOp
            },
            Panel(
                title: "open a query cache + first read", section: .cacheOpen,
                operation: { $0 == "open + first read" }, figure: { $0.p50Nanoseconds }, showsNote: true),
            Panel(
                title: "open a query cache + its index loaded", section: .cacheOpen,
                operation: { $0 == "open + index loaded" }, figure: { $0.p50Nanoseconds }, showsNote: true),
            Panel(title: "put during eviction: p99", section: .eviction, operation: { $0 == "put, eviction on" }) {
                $0.p99Nanoseconds
            },
            Panel(title: "put during eviction: max", section: .eviction, operation: { $0 == "put, eviction on" }) {
                $0.maxNanoseconds
            },
        ]

        /// The overview's SVG elements.
        let svg: String
        /// Where the overview ends, for what follows it.
        let bottom: Double

        /// Lays out the panels that have rows in `report`, from `top` down, colouring engines as
        /// the full charts do (`subjects`).
        init(report: Report, subjects: [String], top: Double) {
            var svg = "<text x=\"10\" y=\"\(top + 16)\" font-size=\"14\" font-weight=\"bold\">"
            svg += "Overview: each engine's time (bars) and, for store operations, the C program's on the same "
            svg += "workload (black ticks)</text>\n"
            svg += "<text x=\"10\" y=\"\(top + 31)\" font-size=\"10\" fill=\"#555\">"
            svg += "log axes; shorter is faster; .flushed where an engine has variants; the C program runs the "
            svg += "store operations on every engine but memory; the wrappers and every other row follow below</text>\n"
            var bottom = top + 40
            var column = 0
            var lineBottom = bottom
            for panel in Self.panels {
                let rows = Self.engineRows(report, panel)
                guard !rows.isEmpty else { continue }
                let left = 10 + Double(column) * (Self.panelWidth + 20)
                let drawn = Self.draw(panel, rows: rows, report: report, subjects: subjects, left: left, top: bottom)
                svg += drawn.svg
                lineBottom = max(lineBottom, drawn.bottom)
                column += 1
                if column == 2 {
                    column = 0
                    bottom = lineBottom + 16
                }
            }
            self.svg = svg
            self.bottom = column == 0 ? bottom : lineBottom + 16
        }

        /// The adapter rows of `panel`: one per plain engine (the wrappers are in the full lists
        /// below), `.flushed` where there are variants.
        static func engineRows(_ report: Report, _ panel: Panel) -> [Measurement] {
            var rows: [Measurement] = []
            for row in report.measurements
            where row.section == panel.section.rawValue && panel.operation(row.operation)
                && BenchEngines.plain.contains(where: { $0.name == row.subject })
            {
                if let index = rows.firstIndex(where: { $0.subject == row.subject }) {
                    if row.variant == "flushed" { rows[index] = row }
                } else {
                    rows.append(row)
                }
            }
            return rows.filter { panel.figure($0) > 0 }
        }

        /// The C program's row for `row`'s engine, variant and operation, if it ran.
        static func cRow(for row: Measurement, in report: Report) -> Measurement? {
            report.measurements.first {
                $0.section == row.section && $0.subject == "C " + row.subject && $0.variant == row.variant
                    && $0.operation == row.operation
            }
        }

        /// Draws `panel` with its `rows` at `left`, `top`; returns its elements and bottom.
        static func draw(
            _ panel: Panel, rows: [Measurement], report: Report, subjects: [String], left: Double, top: Double
        ) -> (svg: String, bottom: Double) {
            let cFigures = rows.compactMap { cRow(for: $0, in: report).map(panel.figure) }
            let values = (rows.map(panel.figure) + cFigures).filter { $0 > 0 }
            let low = pow(10, floor(log10(values.min() ?? 1)))
            let high = pow(10, ceil(log10(max(values.max() ?? 10, low * 10))))
            let plotLeft = left + panelLabelWidth
            let plotWidth = panelWidth - panelLabelWidth - 100
            func x(_ value: Double) -> Double {
                plotLeft + plotWidth * (log10(max(value, low)) - log10(low)) / (log10(high) - log10(low))
            }
            let plotTop = top + 22
            let plotBottom = plotTop + Double(rows.count) * barHeight
            var svg = "<rect x=\"\(left)\" y=\"\(top)\" width=\"\(panelWidth)\" "
            svg += "height=\"\(plotBottom + 22 - top)\" fill=\"none\" stroke=\"#ccc\"/>"
            svg += "<text x=\"\(left + 8)\" y=\"\(top + 15)\" font-size=\"12\" font-weight=\"bold\">"
            svg += "\(escape(panel.title))</text>\n"
            var tick = low
            while tick <= high * 1.0001 {
                let position = x(tick)
                svg +=
                    "<line x1=\"\(position)\" y1=\"\(plotTop)\" x2=\"\(position)\" y2=\"\(plotBottom)\" stroke=\"#ddd\"/>"
                svg +=
                    "<text x=\"\(position)\" y=\"\(plotBottom + 13)\" text-anchor=\"middle\" font-size=\"9\" fill=\"#444\">"
                svg += "\(Report.duration(tick))</text>\n"
                tick *= 10
            }
            for (position, row) in rows.enumerated() {
                let y = plotTop + Double(position) * barHeight
                let figure = panel.figure(row)
                let end = x(figure)
                svg += "<text x=\"\(plotLeft - 5)\" y=\"\(y + 11)\" text-anchor=\"end\">\(escape(row.subject))</text>"
                svg += "<rect x=\"\(plotLeft)\" y=\"\(y + 2)\" width=\"\(max(1, end - plotLeft))\" "
                svg += "height=\"\(barHeight - 4)\" fill=\"\(color(row.subject, among: subjects))\"/>"
                var label = Report.duration(figure)
                if panel.showsNote, let note = row.note { label += " · " + note }
                var labelStart = max(end, plotLeft)
                if let c = cRow(for: row, in: report).map(panel.figure), c > 0 {
                    let position = x(c)
                    labelStart = max(labelStart, position)
                    svg += "<line x1=\"\(position)\" y1=\"\(y)\" x2=\"\(position)\" y2=\"\(y + barHeight)\" "
                    svg += "stroke=\"black\" stroke-width=\"2\"/>"
                    label += String(format: " (%.1fx C)", figure / c)
                }
                svg += "<text x=\"\(labelStart + 4)\" y=\"\(y + 11)\" font-size=\"9\" fill=\"#222\">"
                svg += "\(escape(label))</text>\n"
            }
            return (svg, plotBottom + 22)
        }
    }
}
