"""The node's services: `~/assemble` and `~/explain`, answered from the retained frames."""

from __future__ import annotations

from typing import Callable

from rclpy.node import Node

from working_memory.core.explain import explain
from working_memory.core.frames import Frame
from working_memory.engine.engine import Engine
from working_memory.ros import conversions as conv
from working_memory.srv import Assemble, Explain

NOT_ACTIVE = 'node is not active'


class FrameServices:
    """Answer `~/assemble` and `~/explain` from the engine's frozen frames while active."""

    def __init__(self, node: Node, engine: Engine, output: conv.FrameOutput,
                 active: Callable[[], bool], before: Callable[[], None]):
        """Serve `engine`'s frames for `node`; `before()` runs first (a tick that is due)."""
        self._node, self._engine, self._output = node, engine, output
        self._active, self._before = active, before
        self._services = [node.create_service(Assemble, '~/assemble', self._assemble),
                          node.create_service(Explain, '~/explain', self._explain)]

    def destroy(self) -> None:
        """Destroy both services."""
        for service in self._services:
            self._node.destroy_service(service)
        self._services = []

    def _assemble(self, request: Assemble.Request,
                  response: Assemble.Response) -> Assemble.Response:
        self._before()
        try:
            query = conv.assemble_query(request)
            pack = self._frame(query.tick).pack(query.cabin)
        except (LookupError, ValueError) as error:
            return conv.failed_response(response, str(error))
        return conv.assemble_response(response, pack, self._engine.config.map_frame,
                                      self._output)

    def _explain(self, request: Explain.Request,
                 response: Explain.Response) -> Explain.Response:
        self._before()
        engine = self._engine
        try:
            query = conv.explain_query(request)
            # Only drops change at runtime and packs record them, so the current
            # manifests explain past frames too.
            answer = explain(self._frame(query.tick), engine.manifests, query.cabin, query.key,
                             engine.log, engine.refusals)
            ownership = engine.ownership
            refused = ownership.refusal_note(query.key) if ownership is not None else ''
            if refused:   # the owned key's writes from others (Who may write what)
                answer = answer._replace(detail=f'{answer.detail}; {refused}')
        except (LookupError, ValueError) as error:
            return conv.failed_response(response, str(error))
        return conv.explain_response(response, answer)

    def _frame(self, tick: int) -> Frame:
        """Return the frozen frame of `tick` (0: latest); LookupError says what is valid."""
        if not self._active():
            raise LookupError(NOT_ACTIVE)
        return self._engine.frames.get(tick)
