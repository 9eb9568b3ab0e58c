# tests/browser/build.mk -- tracy-serve's page in a real headless Chromium
# (Debian's /usr/bin/chromium, driven by puppeteer-core from tools/npm, never
# a downloaded browser) against a real tracy-serve on loopback over real
# traces. Runs once, under Debian's python3; screenshots land in
# $(B)/browser-shots (docs/serve-*.png are copies).
check-browser: all $(NPM_STAMP)
	$(Q)LT_BUILD=$(CURDIR)/$(B) $(PYTHON) -m pytest -q -p no:cacheprovider \
		--basetemp=$(CURDIR)/$(B)/browser-tmp tests/browser

# docs/serve-*.png from the demo (not part of make check).
.PHONY: serve-shots
serve-shots: all $(NPM_STAMP)
	$(Q)LT_BUILD=$(CURDIR)/$(B) $(PYTHON) tests/browser/shots.py docs
