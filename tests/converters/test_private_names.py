"""Private names (`__x`) in methods: golden output and behaviour against plain Python."""

import textwrap

import jax
import numpy as np
import pytest

import autograph
from autograph import parsing
from autograph.converters import private_names
from tests.helpers import assert_golden, check_equivalent

# ---------------------------------------------------------------------------
# Golden output


def test_golden_docstring_example():
    assert_golden("""
        class Layer:
            def scale(self, x):
                return x * self.__w
    """, """
        def scale(self, x):
            return x * self._Layer__w
    """, passes=(private_names,))


def test_golden_names_parameters_and_nested_scopes():
    assert_golden("""
        class _Layer:
            def f(self, __x, *__a, __k=1, **__kw):
                __y = [__z for __z in __a]
                def __inner(__p):
                    return __p.__q
                g = lambda __r: __r + __y
                self.__w = __inner(__x)
                return self.__w, self.__init__, __y, g(__k), __kw, h(__key=1)
    """, """
        def f(self, _Layer__x, *_Layer__a, _Layer__k=1, **_Layer__kw):
            _Layer__y = [_Layer__z for _Layer__z in _Layer__a]
            def _Layer__inner(_Layer__p):
                return _Layer__p._Layer__q
            g = lambda _Layer__r: _Layer__r + _Layer__y
            self._Layer__w = _Layer__inner(_Layer__x)
            return (self._Layer__w, self.__init__, _Layer__y, g(_Layer__k), _Layer__kw, h(__key=1))
    """, passes=(private_names,))


def test_golden_nested_class_mangles_its_own_body():
    assert_golden("""
        class Outer:
            def f(self, x):
                class __Inner(Base, size=self.__n):
                    __v = 1
                return __Inner
    """, """
        def f(self, x):
            class _Outer__Inner(Base, size=self._Outer__n):
                __v = 1
            return _Outer__Inner
    """, passes=(private_names,))


_METHOD = "def f(self):\n    return (self.__w, self.__dict__, __name__, _x)\n"


@pytest.mark.parametrize("src", [
    pytest.param(_METHOD, id="not in a class"),
    pytest.param("class __:\n" + textwrap.indent(_METHOD, "    "),
                 id="class name all underscores"),
])
def test_golden_noop(src):
    assert_golden(src, _METHOD, passes=(private_names,))


@pytest.mark.parametrize("qualname, expected", [
    ("Layer.__call__", "Layer"),
    ("f.<locals>.Layer.m", "Layer"),
    ("Layer.m.<locals>.helper", "Layer"),
    ("Outer.Inner.m", "Inner"),
    ("Layer.<lambda>", "Layer"),
    ("f.<locals>.g", None),
    ("f", None),
])
def test_enclosing_class(qualname, expected):
    assert parsing.enclosing_class(qualname) == expected


# ---------------------------------------------------------------------------
# Behaviour


class Scaler:
    def __init__(self, w):
        self.__w = w
        self.__calls = 0

    def __call__(self, x):
        __acc = 0.0
        for _ in range(3):
            if x > 0:
                __acc = __acc + x * self.__w
            else:
                __acc = __acc - x
        self.__calls += 1
        self.__w = self.__w + 1.0
        return __acc + self.__half(x)

    def __half(self, x):
        return x * 0.5


def test_private_attributes_read_and_written_in_a_method():
    for x in (np.float32(2.0), np.float32(-3.0)):
        want_obj, conv_obj, jit_obj = Scaler(2.0), Scaler(2.0), Scaler(2.0)
        want = want_obj(x)
        np.testing.assert_allclose(autograph.convert(conv_obj)(x), want)
        np.testing.assert_allclose(jax.jit(autograph.convert(jit_obj))(x), want, rtol=1e-6)
        for obj in (conv_obj, jit_obj):
            assert obj._Scaler__calls == want_obj._Scaler__calls == 1
            assert float(obj._Scaler__w) == want_obj._Scaler__w == 3.0


def make_local_class():
    class _Local:
        def __init__(self):
            self.__k = 3.0

        def run(self, x):
            while x < 100.0:
                x = x * self.__k
            return x
    return _Local()


def test_private_attribute_in_a_class_defined_in_a_function():
    obj = make_local_class()
    check_equivalent(obj.run, (np.float32(2.0),), (np.float32(500.0),))
