@_spi(Benchmarks) import Sovaria
import Testing

@testable import SovariaWorkloads

@Suite struct WorkloadSpecParsingTests {
    @Test func parsesAYCSBStyleFile() throws {
        let file = """
            # Read-latest with inserts, YCSB's own keys
            workload=site.ycsb.workloads.CoreWorkload
            recordcount = 5000
            operationcount=20000
            readallfields=true

            readproportion=0.9
            updateproportion=0
            insertproportion=0.1
            requestdistribution=latest
            fieldcount=4
            fieldlength=250
            maxscanlength=50
            insertorder=ordered
            zeropadding=10
            ! a Java properties comment
            keyprefix=bench:
            """
        let spec = try WorkloadSpec.parse(workloadFile: file, name: "mine")
        #expect(spec.name == "mine")
        #expect(spec.recordCount == 5_000)
        #expect(spec.operationCount == 20_000)
        #expect(spec.mix == OperationMix(read: 0.9, update: 0, insert: 0.1))
        #expect(spec.requestDistribution == .latest)
        #expect(spec.valueSize == .fixed(bytes: 1_000))
        #expect(spec.scanLengths == 1...50)
        #expect(spec.keys == WorkloadKeys(prefix: "bench:", insertOrder: .ordered, zeroPadding: 10))
    }

    @Test func parsesYCSBsOwnWorkloadFiles() throws {
        // workloads/workloade as YCSB ships it (comments shortened), on Windows line ends.
        let workloadE = [
            "# Yahoo! Cloud System Benchmark", "# Workload E: Short ranges", "recordcount=1000",
            "operationcount=1000", "workload=site.ycsb.workloads.CoreWorkload", "", "readallfields=true", "",
            "readproportion=0", "updateproportion=0", "scanproportion=0.95", "insertproportion=0.05", "",
            "requestdistribution=zipfian", "", "maxscanlength=100", "", "scanlengthdistribution=uniform",
        ].joined(separator: "\r\n")
        var expected = WorkloadSpec.e
        expected.name = "E"
        #expect(try WorkloadSpec.parse(workloadFile: workloadE, name: "E") == expected)
    }

    @Test func uniformValueSizesAndDistributions() throws {
        let spec = try WorkloadSpec.parse(
            workloadFile: "minvaluebytes=10\nmaxvaluebytes=4000\nrequestdistribution=scrambledzipfian")
        #expect(spec.valueSize == .uniform(min: 10, max: 4_000))
        #expect(spec.requestDistribution == .zipfian)
        let hot = try WorkloadSpec().applying(["requestdistribution": "hotspot", "hotspotdatafraction": "0.1"])
        #expect(hot.requestDistribution == .hotspot(hotDataFraction: 0.1, hotOperationFraction: 0.8))
        #expect(
            try WorkloadSpec().applying(["requestdistribution": "unscrambledzipfian"]).requestDistribution
                == .unscrambledZipfian)
    }

    @Test func flagsApplyOnTopOfACoreWorkload() throws {
        let spec = try WorkloadSpec.a.applying([
            "recordcount": "100000", "operationcount": "0", "maxexecutiontime": "30",
        ])
        #expect(spec.recordCount == 100_000)
        #expect(spec.operationCount == nil)
        #expect(spec.maxExecutionTime == .seconds(30))
        #expect(spec.mix == WorkloadSpec.a.mix)
    }

    @Test func defaultsAreYCSBsCoreWorkload() throws {
        let spec = try WorkloadSpec.parse(workloadFile: "# nothing set\n")
        #expect(spec.mix == OperationMix(read: 0.95, update: 0.05))
        #expect(spec.requestDistribution == .uniform)
        #expect(spec.scanLengths == 1...1_000)
        #expect(spec.valueSize == .fixed(bytes: 1_000))
    }

    @Test func lineWithoutEqualsIsMalformed() {
        #expect(throws: WorkloadSpecError.malformedLine(line: 2, text: "readproportion 0.5")) {
            try WorkloadSpec.parse(workloadFile: "recordcount=10\nreadproportion 0.5")
        }
        #expect(throws: WorkloadSpecError.malformedLine(line: 1, text: "=3")) {
            try WorkloadSpec.parse(workloadFile: "=3")
        }
    }

    @Test func unknownKeyIsNamedWithTheAcceptedOnes() throws {
        let error = #expect(throws: WorkloadSpecError.self) {
            try WorkloadSpec.parse(workloadFile: "\n\nreadproportoin=0.5")
        }
        #expect(error == .unknownKey(key: "readproportoin", line: 3, accepted: WorkloadSpec.acceptedProperties))
        #expect(error?.description.contains("readproportion") == true)
        #expect(error?.description.contains("Line 3") == true)
    }

    @Test func badNumbersAreNamed() {
        #expect(
            throws: WorkloadSpecError.invalidValue(
                key: "recordcount", value: "ten", line: 1, expected: "a whole number ≥ 0")
        ) { try WorkloadSpec.parse(workloadFile: "recordcount=ten") }
        #expect(
            throws: WorkloadSpecError.invalidValue(
                key: "readproportion", value: "-0.5", line: 1, expected: "a number ≥ 0")
        ) { try WorkloadSpec.parse(workloadFile: "readproportion=-0.5") }
        #expect(
            throws: WorkloadSpecError.invalidValue(
                key: "hotspotopnfraction", value: "1.5", line: nil, expected: "a number from 0 to 1")
        ) { try WorkloadSpec().applying(["hotspotopnfraction": "1.5"]) }
    }

    @Test func badChoicesListTheAcceptedValues() {
        let error = #expect(throws: WorkloadSpecError.self) {
            try WorkloadSpec.parse(workloadFile: "requestdistribution=exponential")
        }
        guard case .invalidValue(let key, let value, let line, let expected) = error else {
            Issue.record("\(String(describing: error))")
            return
        }
        #expect(key == "requestdistribution" && value == "exponential" && line == 1)
        for name in KeyDistribution.propertyValues { #expect(expected.contains(name)) }
        #expect(throws: WorkloadSpecError.self) { try WorkloadSpec.parse(workloadFile: "insertorder=random") }
        #expect(throws: WorkloadSpecError.self) {
            try WorkloadSpec.parse(workloadFile: "scanlengthdistribution=zipfian")
        }
        #expect(throws: WorkloadSpecError.self) { try WorkloadSpec.parse(workloadFile: "workload=MyWorkload") }
    }

    @Test func inconsistentSettingsAreNamed() {
        #expect(throws: WorkloadSpecError.conflictingKeys(["fieldlength", "maxvaluebytes"])) {
            try WorkloadSpec.parse(workloadFile: "fieldlength=10\nmaxvaluebytes=100")
        }
        #expect(throws: WorkloadSpecError.missingKey(key: "minvaluebytes", requiredKey: "maxvaluebytes")) {
            try WorkloadSpec.parse(workloadFile: "minvaluebytes=100")
        }
        #expect(throws: WorkloadSpecError.invalidValueSizes(min: 200, max: 100)) {
            try WorkloadSpec.parse(workloadFile: "minvaluebytes=200\nmaxvaluebytes=100")
        }
        #expect(throws: WorkloadSpecError.invalidScanLengths(min: 50, max: 10)) {
            try WorkloadSpec.parse(workloadFile: "minscanlength=50\nmaxscanlength=10")
        }
        #expect(throws: WorkloadSpecError.invalidScanLengths(min: 0, max: 10)) {
            try WorkloadSpec.parse(workloadFile: "minscanlength=0\nmaxscanlength=10")
        }
        #expect(throws: WorkloadSpecError.noOperations) {
            try WorkloadSpec.parse(workloadFile: "readproportion=0\nupdateproportion=0")
        }
        #expect(throws: WorkloadSpecError.noRecordsToRead) {
            try WorkloadSpec.parse(workloadFile: "recordcount=0")
        }
        #expect(
            throws: WorkloadSpecError.invalidValue(
                key: "zeropadding", value: "0", line: nil, expected: "a whole number from 1 to 511")
        ) {
            try WorkloadSpec.parse(workloadFile: "zeropadding=0")
        }
    }

    @Test func insertOnlyRunNeedsNoRecords() throws {
        let spec = try WorkloadSpec.parse(
            workloadFile: "recordcount=0\nreadproportion=0\nupdateproportion=0\ninsertproportion=1")
        let operations = Array(try WorkloadStream(spec: spec, seed: 1)).map(\.operation)
        #expect(operations.count == 1_002)
        #expect(operations.dropFirst(2).allSatisfy { if case .insert = $0 { true } else { false } })
    }

    @Test func everyErrorSaysWhatToDo() {
        let errors: [WorkloadSpecError] = [
            .malformedLine(line: 1, text: "x"), .unknownKey(key: "x", line: nil, accepted: ["a"]),
            .invalidValue(key: "k", value: "v", line: 2, expected: "e"), .missingKey(key: "a", requiredKey: "b"),
            .conflictingKeys(["a", "b"]), .noOperations, .noRecordsToRead, .invalidScanLengths(min: 2, max: 1),
            .invalidValueSizes(min: 2, max: 1), .keyPrefixTooLong(prefix: "p", maxUTF8Count: 511),
        ]
        for error in errors { #expect(error.description.count > 20, "\(error)") }
    }
}
