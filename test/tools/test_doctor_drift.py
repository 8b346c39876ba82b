"""The doctor's drift check: one pack answered two ways, but not a kept route and a replan."""

from types import SimpleNamespace

from working_memory.tools.doctor import drift


def _run(decisions):
    """Return a recorded run with one frame per tick (the planner's pack p), decided as given."""
    frames = [SimpleNamespace(tick=tick, digest=f'f{tick}',
                              packs={'planner': SimpleNamespace(digest='p')})
              for tick, _ in decisions]
    statuses = [SimpleNamespace(tick=tick, cabin='planner', digest=f'f{tick}', decision=decision)
                for tick, decision in decisions]
    return SimpleNamespace(recording=SimpleNamespace(frames=frames), decisions=statuses)


def test_a_kept_route_and_the_timed_replan_of_the_same_pack_are_one_answer():
    # The planner replans on its timer: a still robot's one pack gets keep_route, then route.
    found = drift(_run([(1, 'keep_route'), (2, 'keep_route'), (3, 'route')]), None)
    assert found.same_pack == ()


def test_one_pack_answered_two_ways_is_decision_drift():
    found = drift(_run([(1, 'route'), (2, 'no_route')]), None)
    assert found.same_pack == (('planner', 'p', ('no_route', 'route'), (1, 2)),)
