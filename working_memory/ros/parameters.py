"""The parameter table declared on a node: descriptors, rclpy types, overrides, set results.

The rclpy side of `engine/config.py` (the pure table): every node of the package
declares its parameters with these; `NodeParameters` is `working_memory_node`'s whole
table, read at configure and checked on every runtime set.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable, Sequence

from rcl_interfaces.msg import (FloatingPointRange, IntegerRange, ParameterDescriptor,
                                SetParametersResult)
from rclpy.parameter import Parameter

from working_memory.core.manifest import (Manifest, ManifestError, load_manifests,
                                          manifests_from_params)
from working_memory.core.owners import Owners, owners_from_params
from working_memory.engine.config import (CABINS_PREFIX, NodeConfig, OWNERS_PREFIX, PARAMS,
                                          ParamSpec, ParamType, SPECS, cabin_param_specs,
                                          cabin_specs, check_known, check_parameter, check_refused,
                                          check_value, coerce, config_from_values, drop_cabin,
                                          drop_param_spec, owner_specs, param_spec, retired)
from working_memory.engine.params_files import ParamsFileError, dropped, file_values


_PARAMETER_TYPES = {
    ParamType.BOOL: Parameter.Type.BOOL,
    ParamType.INTEGER: Parameter.Type.INTEGER,
    ParamType.DOUBLE: Parameter.Type.DOUBLE,
    ParamType.STRING: Parameter.Type.STRING,
    ParamType.STRING_ARRAY: Parameter.Type.STRING_ARRAY,
}


def declare_parameters(node, specs) -> dict[str, Any]:
    """Declare the rows of `specs` not yet declared on `node`; return every row's value by name.

    Launch overrides win over defaults; rclpy rejects an override of the wrong
    type or outside the range with a ParameterException naming the parameter.
    """
    for spec in specs:
        if node.has_parameter(spec.name):
            continue
        if spec.default != []:
            node.declare_parameter(spec.name, spec.default, parameter_descriptor(spec))
            continue
        # An empty list has no ROS type: declare by type, writable, set the default
        # unless overridden, then apply the real (maybe read-only) descriptor.
        writable = parameter_descriptor(dataclasses.replace(spec, read_only=False))
        declared = node.declare_parameter(spec.name, parameter_type(spec), writable)
        if declared.type_ is Parameter.Type.NOT_SET:
            node.set_parameters([Parameter(spec.name, parameter_type(spec), [])])
        node.set_descriptor(spec.name, parameter_descriptor(spec))
    return {spec.name: node.get_parameter(spec.name).value for spec in specs}


def declare_table(node, specs) -> dict[str, str]:
    """Declare the rows of `specs` not yet declared on `node`; return the overrides refused.

    Rows are declared with dynamic typing, so that a set of the wrong type reaches
    the node's set-parameters callback, which names the parameter and the type it
    expects (rclpy's own type check runs before any callback and names neither);
    the callback keeps the row's type. An override the table refuses (wrong type,
    out of range) is not applied: the row keeps its default and the refusal is
    returned by name, so configure can fail with it while the node keeps running.
    """
    overrides = parameter_overrides(node)
    refused = {}
    for spec in specs:
        if node.has_parameter(spec.name):
            continue
        value = spec.default
        if spec.name in overrides:
            try:
                value = check_value(spec, coerce(spec, overrides[spec.name]))
            except ValueError as error:
                refused[spec.name] = str(error)
        value = list(value) if isinstance(value, tuple) else value
        descriptor = parameter_descriptor(spec, dynamic_typing=True)
        if value != []:
            node.declare_parameter(spec.name, value, descriptor, ignore_override=True)
            continue
        # rclpy types an empty list as a byte array: declare writable, set it as the
        # row's type, then apply the real (maybe read-only) descriptor.
        writable = parameter_descriptor(dataclasses.replace(spec, read_only=False),
                                        dynamic_typing=True)
        node.declare_parameter(spec.name, value, writable, ignore_override=True)
        node.set_parameters([Parameter(spec.name, parameter_type(spec), [])])
        node.set_descriptor(spec.name, descriptor)
    return refused


def parameter_values(node, specs) -> dict[str, Any]:
    """Return the current value of every row of `specs` by name."""
    return {spec.name: node.get_parameter(spec.name).value for spec in specs}


def parameter_overrides(node) -> dict[str, Any]:
    """Return the overrides the node was started with (params files, -p, constructor) by name."""
    # rclpy has no public accessor (rclcpp has get_parameter_overrides()); the node keeps
    # them in _parameter_overrides, which declare_parameter reads.
    return {name: parameter.value for name, parameter in node._parameter_overrides.items()}


def declared_names(node) -> list[str]:
    """Return the names of every parameter declared on `node`."""
    return list(node.list_parameters([], 0).names)


def coerced_parameter(parameter: Parameter) -> Parameter:
    """Return `parameter` with a loosely typed value as its row's type (see params.coerce)."""
    spec = param_spec(parameter.name)
    if spec is None or parameter.type_ is Parameter.Type.NOT_SET:
        return parameter
    value = coerce(spec, parameter.value)
    if value is parameter.value:
        return parameter
    return Parameter(parameter.name, parameter_type(spec), value)


def keep_declared_types(node, parameters: list[Parameter]) -> None:
    """Restore the row's type in the descriptors of `parameters` after a set attempt.

    rclpy writes the type of every value it is offered into a dynamically typed
    descriptor, also one the callback then refuses; `ros2 param describe` must
    keep showing the table's type.
    """
    for parameter in parameters:
        spec = param_spec(parameter.name)
        if spec is not None and node.has_parameter(parameter.name):
            node.describe_parameter(parameter.name).type = parameter_type(spec).value


def declare_double_array(node, name: str, default: list[float], description: str) -> list[float]:
    """Declare a read-only double-array parameter (launch overrides win); return its value."""
    descriptor = ParameterDescriptor(name=name, type=Parameter.Type.DOUBLE_ARRAY.value,
                                     description=description, read_only=True)
    return list(node.declare_parameter(name, default, descriptor).value)


def set_parameters_result(rejection: str | None) -> SetParametersResult:
    """Return an accepting result, or a rejecting one with the reason `rejection`."""
    return SetParametersResult(successful=rejection is None, reason=rejection or '')


def parameter_type(spec: ParamSpec) -> Parameter.Type:
    """Return the rclpy parameter type of a table row."""
    return _PARAMETER_TYPES[spec.type]


def parameter_descriptor(spec: ParamSpec, dynamic_typing: bool = False) -> ParameterDescriptor:
    """Return the ParameterDescriptor of a table row (range, choices, read-only)."""
    descriptor = ParameterDescriptor(name=spec.name, type=parameter_type(spec).value,
                                     description=spec.description, read_only=spec.read_only,
                                     dynamic_typing=dynamic_typing)
    if spec.choices:
        descriptor.additional_constraints = f'one of: {", ".join(spec.choices)}'
    if spec.range is not None and spec.type is ParamType.DOUBLE:
        descriptor.floating_point_range = [FloatingPointRange(
            from_value=float(spec.range[0]), to_value=float(spec.range[1]), step=0.0)]
    elif spec.range is not None:
        descriptor.integer_range = [IntegerRange(
            from_value=int(spec.range[0]), to_value=int(spec.range[1]), step=1)]
    return descriptor


class NodeParameters:
    """The working-memory node's parameter table, declared on the node, read at configure.

    The whole table (and each cabin's `cabins.<cabin>.<field>` rows) is declared at
    construction, so `ros2 param list` and `ros2 param describe` show it before
    configure. An override the table refuses is not applied: the row keeps its
    default and `read` fails naming it, until a valid set replaces it (`accepted`).
    """

    def __init__(self, node: Any, params_files: Sequence[str] = (),
                 overridden: Iterable[str] = ()):
        """Declare the table on `node` and take loosely typed sets as their row's type.

        `params_files` are the files the node was started with, in order: a value of
        theirs the ROS parser dropped (a later file changing a type) is refused too,
        unless the parameter is `overridden` over every file (`-p`, parameter_overrides).
        """
        self._node = node
        # Overrides the table refused at declaration, by name.
        self.refused = declare_table(node, PARAMS)
        cabin_names = node.get_parameter('cabin_names').value
        self.refused.update(declare_table(node, cabin_specs(cabin_names)))
        self.refused.update(declare_table(node, owner_specs(
            node.get_parameter('owner_names').value)))
        self._files: dict[str, list[tuple[Any, str]]] = {}
        try:
            files = file_values(params_files, node.get_fully_qualified_name())
            self._files = {name: value for name, value in files.items()
                           if name not in set(overridden)}
        except ParamsFileError as error:
            self.refused['params_file'] = str(error)
        self.refused.update(dropped(self._files, parameter_overrides(node),
                                    declared_names(node)))
        self.failed_on_refused = False   # the last read failed on refused overrides
        node.add_pre_set_parameters_callback(
            lambda parameters: [coerced_parameter(parameter) for parameter in parameters])

    def read(self) -> tuple[NodeConfig, dict[str, Manifest]]:
        """Return the configuration and the cabins' manifests; raise naming what is wrong.

        ValueError (ManifestError among them) or rclpy's ParameterException, each naming
        the parameter or field at fault: a refused override, an override that names no
        declared parameter (with the closest valid name), an invalid manifest.
        """
        self.failed_on_refused = bool(self.refused)   # check_refused raises then
        check_refused(self.refused)
        config = config_from_values(parameter_values(self._node, PARAMS))
        manifests = self._manifests(config)
        # After _manifests: it declares the drops of the manifests_file cabins.
        overrides = parameter_overrides(self._node)
        check_known(overrides, declared_names(self._node))
        for warning in retired(overrides):
            self._node.get_logger().warning(warning)
        return config, manifests

    def owners(self, config: NodeConfig) -> Owners:
        """Return the owners of `owner_names`; OwnersError (a ValueError) names the fault."""
        values = parameter_values(self._node, owner_specs(config.owner_names))
        return owners_from_params(config.owner_names, {
            name: (tuple(values[f'{OWNERS_PREFIX}{name}.keys']),
                   tuple(values[f'{OWNERS_PREFIX}{name}.nodes']))
            for name in config.owner_names})

    def check(self, parameters: list[Parameter],
              current: tuple[NodeConfig, dict[str, Manifest]] | None) -> SetParametersResult:
        """Validate a set: each value by its row, and with `current` the result as a whole.

        Rows are dynamically typed (declare_table), so the type is checked here and the
        refusal names the parameter and the type or range it expects.
        """
        rejection = None
        try:
            for parameter in parameters:
                check_parameter(parameter.name, parameter.value)
            if current is not None:
                changed(*current, parameters)
        except ValueError as error:
            rejection = str(error)
        keep_declared_types(self._node, parameters)
        return set_parameters_result(rejection)

    def accepted(self, parameters: list[Parameter]) -> bool:
        """Note a set that passed `check`; return True if it replaced a refused override."""
        replaced = [parameter.name for parameter in parameters
                    if self.refused.pop(parameter.name, None) is not None]
        return bool(replaced)

    def _manifests(self, config: NodeConfig) -> dict[str, Manifest]:
        """Load cabins from `manifests_file` and from `cabins.<name>.*` parameters.

        Every cabin gets a runtime `cabins.<name>.drop` parameter; a file cabin's
        initial drops come from the file.
        """
        node, manifests = self._node, {}
        if config.manifests_file:
            for name, manifest in load_manifests(config.manifests_file, node.get_name()).items():
                if name in config.cabin_names:
                    raise ManifestError(f'cabin_names: {name!r} is also defined in '
                                        f'manifests_file {config.manifests_file}')
                spec = drop_param_spec(name, manifest.drop)
                check_refused(declare_table(node, (spec,)))
                check_refused(dropped(self._files, parameter_overrides(node), [spec.name]))
                drop = node.get_parameter(spec.name).value
                manifests[name] = dataclasses.replace(manifest, drop=tuple(drop))
        if config.cabin_names:
            cabins = {}
            for name in config.cabin_names:
                prefix = f'{CABINS_PREFIX}{name}.'
                values = parameter_values(node, cabin_param_specs(name))
                cabins[name] = {key.removeprefix(prefix): value for key, value in values.items()}
            manifests.update(manifests_from_params(
                {'cabin_names': list(config.cabin_names), 'cabins': cabins}))
        return manifests


def changed(config: NodeConfig, manifests: dict[str, Manifest],
            parameters: list[Parameter]) -> tuple[NodeConfig, dict[str, Manifest]]:
    """Return the config and manifests `parameters` make of these; raise ValueError if invalid."""
    config = config.replace({parameter.name: parameter.value for parameter in parameters
                             if parameter.name in SPECS})
    manifests = dict(manifests)
    for parameter in parameters:
        cabin = drop_cabin(parameter.name)
        if cabin in manifests:
            manifests[cabin] = dataclasses.replace(manifests[cabin], drop=tuple(parameter.value))
    return config, manifests
