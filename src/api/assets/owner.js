// The owner console's one script, optional: on a key's messages page it asks the JSON API every
// few seconds for the messages shown and updates their delivery status in place (textContent
// only). Without it the page is the same, and a reload shows the news.
'use strict';
(function () {
  var list = document.querySelector('[data-refresh]');
  if (!list || !window.fetch) return;
  var url = list.getAttribute('data-refresh');
  var EVERY_MS = 3000;

  function set(card, field, text) {
    var node = card.querySelector('[data-field="' + field + '"]');
    if (node && node.textContent !== text) node.textContent = text;
  }

  function update(record) {
    var card = document.getElementById('s-' + record.submission_id);
    if (!card) return;
    card.setAttribute('data-status', record.email_status);
    var badge = card.querySelector('[data-field="status"]');
    if (badge) badge.className = 'badge badge-' + record.email_status;
    set(card, 'status', record.email_status);
    set(card, 'attempts', String(record.email_attempts));
    set(card, 'sent', record.sent_at || 'not yet');
    set(card, 'error', record.last_error || 'none');
    set(card, 'report', describeReport(record.bounce));
    set(card, 'spam', describeSpam(record.spam));
  }

  // The same words as the page's Spam check line, as text.
  function describeSpam(spam) {
    var text;
    if (!spam || !spam.verdict) text = 'not checked';
    else if (spam.verdict === 'unchecked') text = 'not checked: the filter was unavailable, so the email went out';
    else {
      text = (spam.verdict === 'spam' ? 'spam' : 'not spam') + ', score ' + spam.score;
      if (spam.reasons.length) text += ': ' + spam.reasons.map(function (r) { return r.symbol + ' ' + r.score; }).join(', ');
    }
    if (spam && spam.mark) text += '; you marked it ' + (spam.mark === 'spam' ? 'spam' : 'not spam');
    return text;
  }

  // The same words as the page's Report line, as text.
  function describeReport(report) {
    if (!report) return 'none';
    return report.type + (report.status ? ' ' + report.status : '') + (report.reporting_mta ? ' from ' + report.reporting_mta : '') +
      ', ' + report.at + (report.diagnostic ? ': ' + report.diagnostic : '');
  }

  function poll() {
    fetch(url, { credentials: 'same-origin', headers: { accept: 'application/json' } })
      .then(function (response) {
        if (!response.ok) throw new Error(String(response.status));
        return response.json();
      })
      .then(function (page) {
        page.submissions.forEach(update);
        setTimeout(poll, EVERY_MS);
      })
      .catch(function () {
        // Signed out or offline: stop; the page still works by reloading.
      });
  }
  setTimeout(poll, EVERY_MS);
})();
