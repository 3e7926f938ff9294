/// One `key=value` setting of a workload, from a file line or a flag.
package struct WorkloadProperty: Sendable, Equatable {
    /// The property's name, as YCSB spells it (`readproportion`).
    package var key: String
    /// Its value, trimmed of surrounding spaces.
    package var value: String
    /// The line of the workload file it came from, counting from 1; `nil` for a flag.
    package var line: Int?

    /// A setting `key=value`, from `line` of a file or from a flag.
    package init(key: String, value: String, line: Int? = nil) {
        self.key = key
        self.value = value
        self.line = line
    }
}

extension WorkloadSpec {
    /// Every property a workload file or flag may set: YCSB's `CoreWorkload` names, plus
    /// `keyprefix`, `minvaluebytes` and `maxvaluebytes` (a uniform value size) and
    /// `unscrambledzipfian` as a distribution. `workload`, `readallfields` and `writeallfields`
    /// are accepted so YCSB's own files load, and change nothing: a key holds one value here.
    package static let acceptedProperties = [
        "recordcount", "operationcount", "maxexecutiontime",
        "readproportion", "updateproportion", "insertproportion", "scanproportion", "readmodifywriteproportion",
        "requestdistribution", "hotspotdatafraction", "hotspotopnfraction",
        "fieldcount", "fieldlength", "minvaluebytes", "maxvaluebytes",
        "minscanlength", "maxscanlength", "scanlengthdistribution",
        "insertorder", "zeropadding", "keyprefix",
        "workload", "readallfields", "writeallfields",
    ]

    /// The workload a YCSB-style properties file describes, on top of `base` (YCSB's defaults
    /// unless given): `key=value` lines, `#` or `!` comments, blank lines; a key set twice keeps
    /// its last value, as Java's `Properties`.
    ///
    /// ```
    /// # 90% reads of the newest keys, 10% inserts
    /// readproportion=0.9
    /// insertproportion=0.1
    /// requestdistribution=latest
    /// ```
    package static func parse(
        workloadFile text: String, name: String = "custom", base: WorkloadSpec = WorkloadSpec()
    ) throws(WorkloadSpecError) -> WorkloadSpec {
        var properties: [WorkloadProperty] = []
        var lineNumber = 0
        // `isNewline` also splits "\r\n", which Swift reads as one character.
        for rawLine in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline) {
            lineNumber += 1
            let line = rawLine.trimmingSpaces
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix("!") { continue }
            guard let equals = line.firstIndex(of: "=") else {
                throw .malformedLine(line: lineNumber, text: String(line))
            }
            let key = line[..<equals].trimmingSpaces
            guard !key.isEmpty else { throw .malformedLine(line: lineNumber, text: String(line)) }
            let value = line[line.index(after: equals)...].trimmingSpaces
            properties.append(WorkloadProperty(key: String(key), value: String(value), line: lineNumber))
        }
        var spec = try base.applying(properties)
        spec.name = name
        return spec
    }

    /// This workload with `properties` (flags: `["readproportion": "0.9"]`) applied.
    package func applying(_ properties: [String: String]) throws(WorkloadSpecError) -> WorkloadSpec {
        try applying(properties.sorted { $0.key < $1.key }.map { WorkloadProperty(key: $0.key, value: $0.value) })
    }

    /// This workload with `properties` applied (a later setting of a key wins), then validated.
    package func applying(_ properties: [WorkloadProperty]) throws(WorkloadSpecError) -> WorkloadSpec {
        var settings = PropertyReader(properties: [:])
        for property in properties {
            let key = property.key.lowercased()
            guard Self.acceptedProperties.contains(key) else {
                throw .unknownKey(key: property.key, line: property.line, accepted: Self.acceptedProperties)
            }
            settings.properties[key] = property
        }
        var spec = self
        try spec.apply(settings)
        try spec.validate()
        return spec
    }

    private mutating func apply(_ settings: PropertyReader) throws(WorkloadSpecError) {
        if let count = try settings.integer("recordcount") { recordCount = count }
        if let count = try settings.integer("operationcount") { operationCount = count }
        if let seconds = try settings.integer("maxexecutiontime") {
            maxExecutionTime = seconds > 0 ? .seconds(seconds) : nil
        }
        // YCSB: an operation count of 0 with a time limit runs until the limit.
        if operationCount == 0, maxExecutionTime != nil { operationCount = nil }

        if let share = try settings.proportion("readproportion") { mix.read = share }
        if let share = try settings.proportion("updateproportion") { mix.update = share }
        if let share = try settings.proportion("insertproportion") { mix.insert = share }
        if let share = try settings.proportion("scanproportion") { mix.scan = share }
        if let share = try settings.proportion("readmodifywriteproportion") { mix.readModifyWrite = share }

        try applyDistribution(settings)
        try applyScanLengths(settings)
        try applyValueSize(settings)

        if let order = try settings.choice("insertorder", InsertOrder.allCases.map(\.rawValue)) {
            keys.insertOrder = InsertOrder(rawValue: order)!
        }
        if let padding = try settings.integer("zeropadding") { keys.zeroPadding = padding }
        if let prefix = settings.properties["keyprefix"] { keys.prefix = prefix.value }
        if let workload = settings.properties["workload"], !workload.value.hasSuffix("CoreWorkload") {
            throw .invalidValue(
                key: "workload", value: workload.value, line: workload.line,
                expected: "YCSB's core workload class (site.ycsb.workloads.CoreWorkload)")
        }
        _ = try settings.choice("readallfields", ["true", "false"])
        _ = try settings.choice("writeallfields", ["true", "false"])
    }

    private mutating func applyDistribution(_ settings: PropertyReader) throws(WorkloadSpecError) {
        let hotData = try settings.fraction("hotspotdatafraction")
        let hotOperations = try settings.fraction("hotspotopnfraction")
        switch try settings.choice("requestdistribution", KeyDistribution.propertyValues) {
        case "zipfian", "scrambledzipfian": requestDistribution = .zipfian
        case "unscrambledzipfian": requestDistribution = .unscrambledZipfian
        case "uniform": requestDistribution = .uniform
        case "latest": requestDistribution = .latest
        case "hotspot": requestDistribution = KeyDistribution.defaultHotspot
        default: break
        }
        if case .hotspot(let data, let operations) = requestDistribution {
            requestDistribution = .hotspot(
                hotDataFraction: hotData ?? data, hotOperationFraction: hotOperations ?? operations)
        }
    }

    private mutating func applyScanLengths(_ settings: PropertyReader) throws(WorkloadSpecError) {
        _ = try settings.choice("scanlengthdistribution", ["uniform"])
        let minimum = try settings.integer("minscanlength") ?? scanLengths.lowerBound
        let maximum = try settings.integer("maxscanlength") ?? scanLengths.upperBound
        guard minimum >= 1, minimum <= maximum else { throw .invalidScanLengths(min: minimum, max: maximum) }
        scanLengths = minimum...maximum
    }

    private mutating func applyValueSize(_ settings: PropertyReader) throws(WorkloadSpecError) {
        let fieldKeys = ["fieldcount", "fieldlength"].filter { settings.properties[$0] != nil }
        let byteKeys = ["minvaluebytes", "maxvaluebytes"].filter { settings.properties[$0] != nil }
        if !fieldKeys.isEmpty && !byteKeys.isEmpty { throw .conflictingKeys(fieldKeys + byteKeys) }
        if !fieldKeys.isEmpty {
            // YCSB's defaults for the one not given: 10 fields of 100 bytes.
            let count = try settings.integer("fieldcount") ?? 10
            let length = try settings.integer("fieldlength") ?? 100
            let (bytes, overflow) = count.multipliedReportingOverflow(by: length)
            if overflow {
                throw .invalidValue(
                    key: "fieldlength", value: String(length), line: settings.properties["fieldlength"]?.line,
                    expected: "a length whose product with fieldcount fits in memory")
            }
            valueSize = .fixed(bytes: bytes)
        } else if !byteKeys.isEmpty {
            guard let minimum = try settings.integer("minvaluebytes") else {
                throw .missingKey(key: "maxvaluebytes", requiredKey: "minvaluebytes")
            }
            guard let maximum = try settings.integer("maxvaluebytes") else {
                throw .missingKey(key: "minvaluebytes", requiredKey: "maxvaluebytes")
            }
            guard minimum <= maximum else { throw .invalidValueSizes(min: minimum, max: maximum) }
            valueSize = minimum == maximum ? .fixed(bytes: minimum) : .uniform(min: minimum, max: maximum)
        }
    }
}

/// The settings of one `WorkloadSpec.applying(_:)` call, read by type; each
/// reader throws ``WorkloadSpecError/invalidValue(key:value:line:expected:)`` naming the setting.
private struct PropertyReader {
    var properties: [String: WorkloadProperty]

    func integer(_ key: String) throws(WorkloadSpecError) -> Int? {
        guard let property = properties[key] else { return nil }
        guard let value = Int(property.value), value >= 0 else {
            throw .invalidValue(key: key, value: property.value, line: property.line, expected: "a whole number ≥ 0")
        }
        return value
    }

    func proportion(_ key: String) throws(WorkloadSpecError) -> Double? {
        guard let property = properties[key] else { return nil }
        guard let value = Double(property.value), value.isFinite, value >= 0 else {
            throw .invalidValue(key: key, value: property.value, line: property.line, expected: "a number ≥ 0")
        }
        return value
    }

    func fraction(_ key: String) throws(WorkloadSpecError) -> Double? {
        guard let property = properties[key] else { return nil }
        guard let value = Double(property.value), value >= 0, value <= 1 else {
            throw .invalidValue(
                key: key, value: property.value, line: property.line, expected: "a number from 0 to 1")
        }
        return value
    }

    func choice(_ key: String, _ accepted: [String]) throws(WorkloadSpecError) -> String? {
        guard let property = properties[key] else { return nil }
        let value = property.value.lowercased()
        guard accepted.contains(value) else {
            throw .invalidValue(
                key: key, value: property.value, line: property.line,
                expected: "one of " + accepted.joined(separator: ", "))
        }
        return value
    }
}

extension StringProtocol {
    /// The text without spaces, tabs and carriage returns at either end (a file written on
    /// Windows ends its lines in "\r\n").
    fileprivate var trimmingSpaces: Substring {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" }
        let text = self[...]
        guard let first = text.firstIndex(where: { !isSpace($0) }) else { return "" }
        let last = text.lastIndex(where: { !isSpace($0) })!
        return Substring(text[first...last])
    }
}
