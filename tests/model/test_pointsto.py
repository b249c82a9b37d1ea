"""The points-to graph under the value flow: propagation, the cap, watchers, the order of the solve."""

from __future__ import annotations

from collections.abc import Collection, Iterable

from rlmap.model.pointsto import CAP, PointsTo


class Recording(PointsTo):
    """A graph whose watchers record what they see, and whose binding edges tag values."""

    def __init__(self, only_even: frozenset[str] = frozenset()) -> None:
        super().__init__()
        self.seen: list[tuple[str, str]] = []  # (watcher, value), in the order the solve gave them
        self.only_even = only_even

    def guarded(self, name: str) -> bool:
        return name in self.only_even

    def admit(self, name: str, values: Iterable[str]) -> Iterable[str]:
        del name  # every guarded variable here takes even values only
        return [value for value in values if int(value.rpartition("v")[2]) % 2 == 0]

    def handle(self, fact: object, values: Collection[str]) -> None:
        self.seen.extend((str(fact), value) for value in sorted(values))

    def bound(self, values: Iterable[str], receiver: str) -> list[str]:
        return [f"{receiver}|{value}" for value in sorted(values)]


def test_values_flow_along_copies_added_before_and_after() -> None:
    graph = Recording()
    graph.copy("a", "b")
    graph.add("a", ("v1",))
    graph.solve()
    graph.copy("b", "c")  # a copy made after the values arrived still receives them
    graph.solve()
    assert list(graph.values_of("c")) == ["v1"]
    assert not graph.values_of("never used")


def test_a_cycle_of_copies_ends() -> None:
    graph = Recording()
    graph.copy("a", "b")
    graph.copy("b", "a")
    graph.add("a", ("v1",))
    graph.add("b", ("v2",))
    graph.solve()
    assert sorted(graph.values_of("a")) == sorted(graph.values_of("b")) == ["v1", "v2"]


def test_the_cap_keeps_the_first_values_in_sorted_order() -> None:
    graph = Recording()
    many = [f"v{index:03d}" for index in range(CAP + 10)]
    graph.add("x", reversed(many))  # arriving together: the smallest are kept
    graph.add("x", ("a-late-value",))  # full: dropped, though it sorts first
    assert list(graph.values_of("x")) == many[:CAP]


def test_watchers_see_each_value_once_and_late_watchers_see_what_is_there() -> None:
    graph = Recording()
    graph.watch("x", "early")
    graph.add("x", ("v2", "v1"))
    graph.solve()
    graph.watch("x", "late")
    graph.add("x", ("v3",))
    graph.solve()
    assert graph.seen == [
        ("early", "v1"),
        ("early", "v2"),
        ("late", "v1"),
        ("late", "v2"),
        ("early", "v3"),
        ("late", "v3"),
    ]


def test_bindings_transform_values_and_guards_filter_them() -> None:
    graph = Recording(only_even=frozenset({"evens"}))
    graph.bind_copy("methods", "bound", "r")
    graph.copy("numbers", "evens")
    graph.add("methods", ("v1",))
    graph.add("numbers", ("v1", "v2", "v3", "v4"))
    graph.solve()
    assert list(graph.values_of("bound")) == ["r|v1"]
    assert list(graph.values_of("evens")) == ["v2", "v4"]


def test_the_worklist_visits_the_latest_variable_first_and_queues_copies_by_name() -> None:
    graph = Recording()
    for name in ("z", "y"):  # made in this order, queued in name order (y, z): z is visited first
        graph.copy("source", name)
        graph.watch(name, name)
    graph.watch("other", "other")
    graph.add("source", ("v1",))
    graph.add("other", ("v1",))  # queued last: visited first
    graph.solve()
    assert graph.seen == [("other", "v1"), ("z", "v1"), ("y", "v1")]


def test_release_lets_the_graph_go() -> None:
    graph = Recording()
    graph.copy("a", "b")
    graph.copy("b", "a")
    graph.add("a", ("v1",))
    graph.solve()
    graph.release()
    assert not graph.ids
    assert not graph.values_of("a")


def test_many_copies_are_queued_by_name_whatever_order_they_were_made_in() -> None:
    graph = Recording()
    names = [f"c{index:02d}" for index in range(12)]  # more than a tuple holds: the sorted list
    for name in (*names[::2], *names[1::2], names[3]):  # made out of order, one twice
        graph.copy("source", name)
    for name in names:
        graph.watch(name, name)
    graph.add("source", ("v1",))
    graph.solve()
    assert graph.seen == [(name, "v1") for name in reversed(names)]  # queued in name order, last first


def test_one_target_bound_through_several_receivers_gets_each_binding_once() -> None:
    graph = Recording()
    for receiver in ("r2", "r1", "r1"):
        graph.bind_copy("methods", "bound", receiver)
    graph.add("methods", ("v1",))
    graph.solve()
    assert list(graph.values_of("bound")) == ["r1|v1", "r2|v1"]


def test_a_copy_target_waits_unnumbered_until_its_source_holds_a_value() -> None:
    graph = Recording()
    graph.copy("a", "b")  # "a" holds nothing: "b" is not made
    graph.copy("a", "b")
    graph.copy("never", "c")
    assert "b" not in graph.ids
    assert "c" not in graph.ids
    graph.watch("b", "w")
    graph.add("a", ["v1"])  # (a list of one value) "b", made since by its watcher, is fed by a's visit
    graph.solve()
    assert list(graph.values_of("b")) == ["v1"]
    assert graph.seen == [("w", "v1")]
    assert "c" not in graph.ids  # its source never held a value
    assert graph.all_values() == {"a": ("v1",), "b": ("v1",)}


def test_a_variable_bound_into_several_others_feeds_each_with_every_receiver() -> None:
    graph = Recording()
    graph.bind_copy("methods", "b2", "r1")  # one binding: held as a pair
    graph.add("methods", ("v1",))
    graph.solve()
    graph.bind_copy("methods", "b2", "r0")  # a second receiver for the same variable
    graph.bind_copy("methods", "b1", "r2")  # a second variable: the pair becomes a table
    graph.bind_copy("methods", "b1", "r2")  # (made twice: bound once)
    for name in ("b1", "b2"):
        graph.watch(name, name)
    graph.add("methods", ("v2",))
    graph.solve()
    assert list(graph.values_of("b2")) == ["r1|v1", "r0|v1", "r0|v2", "r1|v2"]
    assert list(graph.values_of("b1")) == ["r2|v1", "r2|v2"]
    # each watcher sees what its variable holds when made; then "methods" (queued last) is
    # visited, and b1, queued after b2 when the second bindings pushed v1, is visited before it
    assert graph.seen == [
        ("b1", "r2|v1"),
        ("b2", "r0|v1"),
        ("b2", "r1|v1"),
        ("b1", "r2|v2"),
        ("b2", "r0|v2"),
        ("b2", "r1|v2"),
    ]


def test_a_watcher_added_to_a_variable_being_visited_waits_for_the_next_value() -> None:
    class Adding(Recording):
        def handle(self, fact: object, values: Collection[str]) -> None:
            super().handle(fact, values)
            if fact == "first" and len(self.seen) == 1:  # a fact that makes another one
                self.watch("x", "second")

    graph = Adding()
    graph.watch("x", "first")
    graph.add("x", ("v1",))
    graph.solve()
    graph.add("x", ("v2",))
    graph.solve()
    # the watcher made while "x" was visited saw v1 when made, then v2 with the first watcher
    assert graph.seen == [("first", "v1"), ("second", "v1"), ("first", "v2"), ("second", "v2")]


class Counting(Recording):
    """A graph that counts the values handed to a watcher and to a copy's receiver; facts named
    ``again:...`` are handed again the values they saw (see :meth:`PointsTo.again`)."""

    def __init__(self) -> None:
        super().__init__()
        self.pushed: list[tuple[int, tuple[str, ...]]] = []

    def again(self, fact: object, values: tuple[str, ...]) -> list[str]:
        return list(values) if str(fact).startswith("again:") else []

    def add_to(self, variable: int, values: Collection[str]) -> None:
        self.pushed.append((variable, tuple(values)))
        super().add_to(variable, values)


def test_a_watcher_added_while_its_variable_waits_sees_each_value_once() -> None:
    graph = Counting()
    graph.add("x", ("v1", "v2"))  # waits on the worklist
    graph.watch("x", "w")  # sees v1, v2 now
    graph.watch("x", "again:w")  # sees them now, and again at the visit
    graph.add("x", ("v3",))  # arrives after: seen at the visit
    graph.solve()
    assert [value for watcher, value in graph.seen if watcher == "w"] == ["v1", "v2", "v3"]
    assert [value for watcher, value in graph.seen if watcher == "again:w"] == ["v1", "v2", "v1", "v2", "v3"]
    graph.add("x", ("v4",))  # a later visit: the watcher sees the new value alone
    graph.solve()
    assert [value for watcher, value in graph.seen if watcher == "w"] == ["v1", "v2", "v3", "v4"]


def test_a_copy_made_while_its_source_waits_is_pushed_each_value_once() -> None:
    graph = Counting()
    graph.add("a", ("v1",))
    graph.copy("a", "b")  # b receives v1 now
    graph.add("a", ("v2",))
    graph.solve()
    receiver = graph.ids["b"]
    assert [values for variable, values in graph.pushed if variable == receiver] == [("v1",), ("v2",)]
    assert list(graph.values_of("b")) == ["v1", "v2"]
