package pyjoynr.oracle;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

import io.joynr.provider.Deferred;
import io.joynr.provider.DeferredVoid;
import io.joynr.provider.Promise;
import joynr.example.Country;
import joynr.example.RadioAbstractProvider;
import joynr.example.RadioStation;
import joynr.example.ShuffleError;

/** The radio as a joynr Java provider: the same behaviour as the example's Python provider. */
final class RadioService extends RadioAbstractProvider {
    private RadioStation current = new RadioStation("FM4", Country.AUSTRIA, true);
    private int volume = 50;
    private final List<RadioStation> favorites = new ArrayList<>();
    private final AtomicLong logMessages = new AtomicLong();
    private final AtomicLong stationsHeard = new AtomicLong();
    private volatile boolean quiet;

    void setQuiet(boolean quiet) {
        this.quiet = quiet;
    }

    synchronized void changeStation(RadioStation station) {
        current = station;
        currentStationChanged(station);
    }

    synchronized void changeVolume(int value) {
        volume = value;
        volumeChanged(value);
    }

    synchronized Map<String, Object> state() {
        Map<String, Object> out = new LinkedHashMap<>();
        List<Object> names = new ArrayList<>();
        favorites.forEach(s -> names.add(RadioApp.stationJson(s)));
        out.put("favorites", names);
        out.put("currentStation", RadioApp.stationJson(current));
        out.put("volume", volume);
        out.put("logMessages", logMessages.get());
        out.put("stationsHeard", stationsHeard.get());
        return out;
    }

    @Override
    public synchronized Promise<Deferred<RadioStation>> getCurrentStation() {
        Deferred<RadioStation> deferred = new Deferred<>();
        deferred.resolve(current);
        return new Promise<>(deferred);
    }

    @Override
    public synchronized Promise<Deferred<Integer>> getVolume() {
        Deferred<Integer> deferred = new Deferred<>();
        deferred.resolve(volume);
        return new Promise<>(deferred);
    }

    @Override
    public Promise<DeferredVoid> setVolume(Integer value) {
        changeVolume(value);
        DeferredVoid deferred = new DeferredVoid();
        deferred.resolve();
        return new Promise<>(deferred);
    }

    @Override
    public synchronized Promise<AddFavoriteStationDeferred> addFavoriteStation(RadioStation station) {
        AddFavoriteStationDeferred deferred = new AddFavoriteStationDeferred();
        boolean known = favorites.stream().anyMatch(s -> s.getName().equals(station.getName()));
        if (!known) {
            favorites.add(station);
        }
        deferred.resolve(!known);
        return new Promise<>(deferred);
    }

    @Override
    public synchronized Promise<ShuffleStationsDeferred> shuffleStations() {
        ShuffleStationsDeferred deferred = new ShuffleStationsDeferred();
        if (favorites.size() < 2) {
            deferred.reject(ShuffleError.NO_STATIONS);
        } else {
            Collections.shuffle(favorites);
            changeStation(favorites.get(0));
            deferred.resolve();
        }
        return new Promise<>(deferred);
    }

    @Override
    public synchronized Promise<DescribeStationDeferred> describeStation(String name) {
        DescribeStationDeferred deferred = new DescribeStationDeferred();
        String description = name;
        for (RadioStation s : favorites) {
            if (s.getName().equals(name)) {
                String country = s.getCountry().name();
                description = name + " (" + country.charAt(0) + country.substring(1).toLowerCase() + ")";
            }
        }
        deferred.resolve(description);
        return new Promise<>(deferred);
    }

    @Override
    public void logMessage(String text) {
        logMessages.incrementAndGet();
        if (!quiet) {
            Lines.event("logMessage", Map.of("text", text));
        }
    }

    @Override
    public void stationHeard(RadioStation station) {
        stationsHeard.incrementAndGet();
        if (!quiet) {
            Map<String, Object> fields = new LinkedHashMap<>();
            fields.put("station", RadioApp.stationJson(station));
            Lines.event("stationHeard", fields);
        }
    }
}
