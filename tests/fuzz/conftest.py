"""Prints the fuzzing statistics (programs run, refusal rate) after the test session."""


def pytest_terminal_summary(terminalreporter):
    import sys
    mod = sys.modules.get("tests.fuzz.test_fuzz")
    if mod is None or not mod.STATS:
        return
    stats = mod.STATS
    total = sum(stats.values())
    ran = stats["ok"] + stats["skipped"] + stats["refused"]
    rate = stats["refused"] / ran if ran else 0.0
    tr = terminalreporter
    tr.section("autograph fuzz")
    tr.write_line(f"{total} programs: " + ", ".join(f"{k} {v}" for k, v in sorted(stats.items())))
    tr.write_line(f"refused {rate:.1%} of the {ran} programs that run in plain Python")
    for sig, count in mod.REFUSALS.most_common(5):
        tr.write_line(f"  {count:4d}  {sig}")
