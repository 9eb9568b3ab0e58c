tracy-sql corrupt-events.tracy -o run.db; e=$?; ls; exit $e
