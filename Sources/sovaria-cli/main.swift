import Foundation

// `sovaria`: dump, load, migrate, inspect, verify and compact any Sovaria store named by URL.
// Exit statuses (documented in Sources/Sovaria/Sovaria.docc/TheSovariaCommand.md): 0 done, 1 other
// failure, 2 usage, 3 store cannot be opened, 4 verify found a difference, 5 target full,
// 6 interrupted and resumable, 7 wrong key or passphrase.

let help = """
    sovaria: move, check and look into Sovaria stores.

    Commands:
      \(MigrateCommand.usage)
      \(DumpCommand.usage)
      \(LoadCommand.usage)
      \(InspectCommand.usage)
      \(VerifyCommand.usage)
      \(CompactCommand.usage)
      \(BenchCommand.usage)

    \(StoreLocation.forms)

    Exit status: 0 done, 1 other failure, 2 usage, 3 store cannot be opened, 4 verify found a
    difference, 5 target full, 6 interrupted (run again with --resume), 7 wrong key or passphrase.
    Benchmarks: `make bench` builds and runs sovaria-bench (the Benchmarks package) in release;
    `sovaria bench` runs the one next to this sovaria.
    """

let arguments = CommandLine.arguments.dropFirst()
let status: CommandFailure.ExitStatus
do throws(CommandFailure) {
    switch arguments.first {
    case "migrate": try await MigrateCommand.run(arguments.dropFirst())
    case "dump": try await DumpCommand.run(arguments.dropFirst())
    case "load": try await LoadCommand.run(arguments.dropFirst())
    case "inspect": try await InspectCommand.run(arguments.dropFirst())
    case "verify": try await VerifyCommand.run(arguments.dropFirst())
    case "compact": try await CompactCommand.run(arguments.dropFirst())
    case "bench": try BenchCommand.run(arguments.dropFirst())
    case "help", "--help", "-h":
        Terminal.print(help)
    case nil:
        Terminal.printError(help)
        throw CommandFailure(.usage, "no command given.")
    case let other?:
        throw CommandFailure.usage("`\(other)` is not a sovaria command.")
    }
    status = .done
} catch {
    Terminal.printError("sovaria: " + error.message)
    status = error.status
}
exit(status.rawValue)
