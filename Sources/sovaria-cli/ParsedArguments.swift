/// A command's arguments split into positionals, `--name value` options and `--flag`s.
///
/// Deliberately small (no dependency outside the toolchain): options are `--name value` or
/// `--name=value`; anything unknown is a usage error naming the option.
struct ParsedArguments {
    private(set) var positionals: [String] = []
    private var values: [String: String] = [:]
    private var flags: Set<String> = []

    init(_ arguments: some Sequence<String>, options: Set<String>, flags knownFlags: Set<String>) throws(CommandFailure)
    {
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            guard argument.hasPrefix("--"), argument.count > 2 else {
                positionals.append(argument)
                continue
            }
            var name = String(argument.dropFirst(2))
            var inlineValue: String?
            if let equals = name.firstIndex(of: "=") {
                inlineValue = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            if options.contains(name) {
                guard let value = inlineValue ?? iterator.next() else {
                    throw .usage("--\(name) needs a value.")
                }
                values[name] = value
            } else if knownFlags.contains(name), inlineValue == nil {
                flags.insert(name)
            } else {
                let known = (options.map { "--\($0) VALUE" } + knownFlags.map { "--\($0)" }).sorted()
                throw .usage("Unknown option --\(name). This command takes: \(known.joined(separator: ", ")).")
            }
        }
    }

    func value(_ name: String) -> String? { values[name] }

    func has(_ flag: String) -> Bool { flags.contains(flag) }

    func positiveInteger(_ name: String, default defaultValue: Int) throws(CommandFailure) -> Int {
        guard let text = values[name] else { return defaultValue }
        guard let number = Int(text), number > 0 else { throw .usage("--\(name) takes a positive whole number.") }
        return number
    }

    /// The one positional a command such as `dump URL` needs.
    func single(_ what: String, command: String) throws(CommandFailure) -> String {
        guard positionals.count == 1 else {
            throw .usage("`sovaria \(command)` takes one \(what); got \(positionals.count).")
        }
        return positionals[0]
    }
}
