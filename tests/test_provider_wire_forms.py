"""A provider method's wire-form twin (programming.providers.wire_form_of): calls that arrive as
messages run the twin and send its result as it is; direct calls run the method; the class is
checked when it is made."""

from __future__ import annotations

import pytest

from pyjoynr.libjoynr import ApplicationError
from pyjoynr.libjoynr.advanced import wire_form_of
from pyjoynr.runtime.interface import to_wire
from tests.support.radio import Country, FavoriteError, Radio, RadioProvider, Station


class TwinRadioProvider(RadioProvider):
    """``favorites`` and ``remove_favorite`` with twins; the twins count their calls."""

    def __init__(self) -> None:
        super().__init__()
        self.twin_calls = 0

    @wire_form_of("favorites")
    async def _favorites_wired(self) -> list[dict[str, object]]:
        self.twin_calls += 1
        return [{"name": f"{s.name} (wired)", "country": s.country.name,
                 "frequency": s.frequency} for s in self.stations]

    @wire_form_of("remove_favorite")
    async def _remove_favorite_wired(self, name: str) -> None:
        self.twin_calls += 1
        raise ApplicationError(FavoriteError.FULL.name, f"the twin refuses {name}")


async def test_a_call_as_a_message_runs_the_twin_a_direct_call_the_method(cc) -> None:
    provider = TwinRadioProvider()
    provider.stations = [Station("FM4", Country.AUSTRIA, 103.8)]
    await cc.runtime.register_provider("twins", provider)
    proxy = await cc.runtime.build_proxy(Radio, "twins", ttl_ms=5_000)

    assert await proxy.favorites() == [Station("FM4 (wired)", Country.AUSTRIA, 103.8)]
    assert provider.twin_calls == 1
    assert await provider.favorites() == [Station("FM4", Country.AUSTRIA, 103.8)]
    assert provider.twin_calls == 1
    # a method without a twin is converted as always
    assert await proxy.add_favorite(Station("Oe1", Country.AUSTRIA, 87.8)) is True
    assert provider.twin_calls == 1


async def test_a_twins_modelled_error_reaches_the_caller(cc) -> None:
    provider = TwinRadioProvider()
    await cc.runtime.register_provider("twin-errors", provider)
    proxy = await cc.runtime.build_proxy(Radio, "twin-errors", ttl_ms=5_000)
    with pytest.raises(ApplicationError) as caught:
        await proxy.remove_favorite("FM4")
    assert caught.value.error == FavoriteError.FULL.name
    assert provider.twin_calls == 1


async def test_an_override_of_the_method_in_a_subclass_wins_over_the_inherited_twin(cc) -> None:
    class Overriding(TwinRadioProvider):
        async def favorites(self) -> list[Station]:
            return [Station("overridden", Country.GERMANY)]

    provider = Overriding()
    await cc.runtime.register_provider("twin-override", provider)
    proxy = await cc.runtime.build_proxy(Radio, "twin-override", ttl_ms=5_000)
    assert await proxy.favorites() == [Station("overridden", Country.GERMANY)]
    assert provider.twin_calls == 0
    assert type(provider).wire_forms == {"remove_favorite": "_remove_favorite_wired"}


def test_a_twin_of_a_method_the_interface_does_not_have_is_refused() -> None:
    with pytest.raises(TypeError, match="does not have: favourites"):
        class Misspelt(RadioProvider):
            @wire_form_of("favourites")
            async def _wired(self) -> list[object]:
                return []


def test_two_twins_of_one_method_are_refused() -> None:
    with pytest.raises(TypeError, match="favorites has two wire-form twins"):
        class Twice(RadioProvider):
            @wire_form_of("favorites")
            async def _one(self) -> list[object]:
                return []

            @wire_form_of("favorites")
            async def _two(self) -> list[object]:
                return []


def test_a_twin_must_be_a_coroutine_function() -> None:
    with pytest.raises(TypeError, match="must be an async def"):
        wire_form_of("favorites")(lambda self: [])


async def test_the_twins_answer_equals_the_conversion_of_the_methods() -> None:
    """What a twin must hold to (here for the test provider's plain twin of favorites)."""

    class Faithful(RadioProvider):
        @wire_form_of("favorites")
        async def _favorites_wired(self) -> list[object]:
            return [{"name": s.name, "country": s.country.name, "frequency": s.frequency}
                    for s in self.stations]

    provider = Faithful()
    provider.stations = [Station("FM4", Country.AUSTRIA, 103.8), Station("B5", Country.GERMANY)]
    assert await provider._favorites_wired() == to_wire(await provider.favorites())
