import Sovaria

extension OfflineStoreConformance {
    static let batchChecks: [ConformanceCheck] = [
        ConformanceCheck(
            "batchAppliesInOrder", "write(_:) applies its writes in order; an empty batch changes nothing."
        ) { context in
            let store = try await context.makeStore().store
            try await store.set("old", "1")
            try await store.write([
                .set(key: "a", value: "1"), .set(key: "b", value: "2"), .delete(key: "a"), .set(key: "c", value: "3"),
                .set(key: "b", value: "4"), .delete(key: "old"), .delete(key: "never"), .set(key: "d", value: ""),
            ])
            try await store.write([])
            try context.expectKeys(try await store.keys(""), ["b", "c", "d"], "keys after the batch")
            try context.expectBytes(try await store.get("b"), "4", "last write to b wins")
            try context.expectBytes(try await store.get("c"), "3", "get(c)")
            try context.expectBytes(try await store.get("d"), "", "get(d)")
        },
        ConformanceCheck(
            "batchRewritingAKeyKeepsItsLastWriteAcrossReopen",
            "A batch that writes one key several times (short and 511-byte keys) keeps its last write, also "
                + "after a reopen: a store that replays a batch from a journal must not replay it out of order."
        ) { context in
            let folder = try context.makeFolder()
            let long = String(repeating: "L", count: context.factory.maxKeyUTF8Count)
            do {
                let store = try await context.factory.open(folder)
                try await store.write([.set(key: "gone", value: "old"), .set(key: long, value: "old")])
                try await store.write([
                    .set(key: "k", value: "1"), .delete(key: "k"), .set(key: "k", value: "2"), .delete(key: "gone"),
                    .set(key: "gone", value: "back"), .delete(key: "gone"), .set(key: long, value: "a"),
                    .delete(key: long), .set(key: long, value: "b"),
                ])
                try context.expectBytes(try await store.get("k"), "2", "last write to k")
                try context.expectBytes(try await store.get("gone"), nil, "a key the batch deleted last")
                try context.expectBytes(try await store.get(long), "b", "last write to the 511-byte key")
                guard store.isPersistent else { return }
            }
            let reopened = try await context.factory.open(folder)
            try context.expectKeys(try await reopened.keys(""), byteSorted(["k", long]), "keys after reopen")
            try context.expectBytes(try await reopened.get("k"), "2", "last write to k after reopen")
            try context.expectBytes(try await reopened.get(long), "b", "last write to the long key after reopen")
        },
        ConformanceCheck(
            "batchWithInvalidKeyChangesNothing",
            "A batch with an invalid key anywhere throws .invalidKey and writes none of its writes."
        ) { context in
            let store = try await context.makeStore().store
            try await store.set("existing", "before")
            let tooLong = String(repeating: "x", count: context.factory.maxKeyUTF8Count + 1)
            for invalid in ["", tooLong] {
                try await context.expectError(.invalidKey, "batch with a \(invalid.utf8.count)-byte key") {
                    try await store.write([
                        .set(key: "first", value: "1"), .delete(key: "existing"), .set(key: invalid, value: "x"),
                        .set(key: "last", value: "2"),
                    ])
                }
                try await context.expectError(.invalidKey, "batch deleting a \(invalid.utf8.count)-byte key") {
                    try await store.write([.set(key: "first", value: "1"), .delete(key: invalid)])
                }
            }
            try context.expectKeys(try await store.keys(""), ["existing"], "keys after rejected batches")
            try context.expectBytes(try await store.get("existing"), "before", "entry a rejected batch deleted")
        },
        ConformanceCheck(
            "atomicBatchIsNeverSeenHalfApplied",
            "With .atomicBatch, a reader never sees part of a batch (checked while batches run)."
        ) { context in
            let store = try await context.makeStore().store
            guard store.capabilities.contains(.atomicBatch) else { return }
            try await store.write([.set(key: "x", value: "0"), .set(key: "y", value: "0")])
            let rounds = 60
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for round in 1...rounds {
                        try await store.write([.set(key: "x", value: "\(round)"), .set(key: "y", value: "\(round)")])
                    }
                }
                for _ in 0..<3 {
                    group.addTask {
                        for _ in 0..<(rounds * 2) {
                            // x is written before y in every batch: a reader that sees x at round n and
                            // then y below n has seen a batch half applied.
                            let x = Int(try await store.get("x") ?? "") ?? -1
                            let y = Int(try await store.get("y") ?? "") ?? -1
                            try context.expect(y >= x, "read x = \(x), then y = \(y): a batch was half applied")
                        }
                    }
                }
                try await group.waitForAll()
            }
            try context.expectBytes(try await store.get("y"), "\(rounds)", "y after every batch")
        },
        ConformanceCheck(
            "concurrentBatchesEachGetTheirOwnOutcome",
            "Batches written at once by many tasks (which a store may commit together) each get their own "
                + "outcome: a batch with an invalid key throws .invalidKey and leaves nothing, the others are "
                + "applied whole, and each task's writes to its own key keep their order."
        ) { context in
            let store = try await context.makeStore().store
            let writers = 16
            let rounds = 6
            let invalid = String(repeating: "k", count: context.factory.maxKeyUTF8Count + 1)
            /// Every third batch of every other writer carries an invalid key.
            let refused: @Sendable (Int, Int) -> Bool = { writer, round in writer % 2 == 1 && round % 3 == 2 }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<writers {
                    group.addTask {
                        for round in 0..<rounds {
                            var batch: [StoreWrite] = [
                                .set(key: "w\(writer)-r\(round)-a", value: "\(writer).\(round)"),
                                .set(key: "w\(writer)-last", value: "\(round)"),
                            ]
                            if refused(writer, round) { batch.append(.delete(key: invalid)) }
                            batch.append(.set(key: "w\(writer)-r\(round)-b", value: "\(writer).\(round)"))
                            if refused(writer, round) {
                                try await context.expectError(.invalidKey, "writer \(writer)'s batch \(round)") {
                                    try await store.write(batch)
                                }
                            } else {
                                try await store.write(batch)
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            for writer in 0..<writers {
                let lastApplied = (0..<rounds).last { !refused(writer, $0) } ?? -1
                try context.expectBytes(
                    try await store.get("w\(writer)-last"), "\(lastApplied)", "writer \(writer)'s last applied batch")
                for round in 0..<rounds {
                    let expected = refused(writer, round) ? nil : "\(writer).\(round)"
                    for part in ["a", "b"] {
                        try context.expectBytes(
                            try await store.get("w\(writer)-r\(round)-\(part)"), expected,
                            "writer \(writer)'s batch \(round), key \(part)")
                    }
                }
            }
        },
    ]
}
