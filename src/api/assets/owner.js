// The owner console's one script, optional: on a key's messages page it asks the JSON API every
// few seconds for the messages shown and updates each card in place (textContent only): the
// status with what it means, the attempts and their history, and which buttons apply. Without it
// the page is the same, and a reload shows the news.
'use strict';
(function () {
  var list = document.querySelector('[data-refresh]');
  if (!list || !window.fetch) return;
  var url = list.getAttribute('data-refresh');
  // The page's own words for each status, and the statuses that may be re-sent.
  var statusHelp = JSON.parse(list.getAttribute('data-status-help') || '{}');
  var resendable = (list.getAttribute('data-resendable') || '').split(' ');
  var EVERY_MS = 3000;

  function field(card, name) {
    return card.querySelector('[data-field="' + name + '"]');
  }

  function set(card, name, text) {
    var node = field(card, name);
    if (node && node.textContent !== text) node.textContent = text;
  }

  function show(card, name, shown) {
    var node = card.querySelector('[data-show="' + name + '"]');
    if (node) node.hidden = !shown;
  }

  function update(record) {
    var card = document.getElementById('s-' + record.submission_id);
    if (!card) return;
    card.setAttribute('data-status', record.email_status);
    var badge = field(card, 'status');
    if (badge) badge.className = 'badge badge-' + record.email_status;
    set(card, 'status', record.email_status);
    set(card, 'hint', statusHelp[record.email_status] || '');
    set(card, 'attempts', String(record.email_attempts));
    set(card, 'last-attempt', record.last_attempt_at || 'none yet');
    set(card, 'next-attempt', record.next_attempt_at || '');
    show(card, 'next-attempt', Boolean(record.next_attempt_at));
    set(card, 'sent', record.sent_at || 'not yet');
    set(card, 'error', record.last_error || 'none');
    set(card, 'report', describeReport(record.bounce));
    set(card, 'spam', describeSpam(record.spam));
    updateHistory(card, record);
    // The same buttons as the page would render for this status.
    var heldAsSpam = record.email_status === 'spam' || Boolean(record.spam && record.spam.mark === 'spam');
    show(card, 'ham', heldAsSpam);
    show(card, 'spam', !heldAsSpam);
    set(card, 'ham-label', record.email_status === 'spam' ? 'Not spam: send it to me' : 'Not spam');
    show(card, 'resend', resendable.indexOf(record.email_status) >= 0);
  }

  // The page's Delivery history list, rebuilt when an attempt was added.
  function updateHistory(card, record) {
    var attempts = record.delivery_attempts || [];
    show(card, 'history', attempts.length > 0);
    // Newest first, as the page lists them.
    var total = record.delivery_attempts_total || 0;
    set(card, 'history-count', total + ' attempt' + (total === 1 ? '' : 's') + (total > attempts.length ? ', the latest ' + attempts.length + ' shown' : ''));
    var listNode = field(card, 'history');
    if (!listNode || listNode.getAttribute('data-total') === String(total)) return;
    listNode.setAttribute('data-total', String(total));
    while (listNode.firstChild) listNode.removeChild(listNode.firstChild);
    attempts.forEach(function (attempt) {
      var item = document.createElement('li');
      var time = document.createElement('time');
      time.setAttribute('datetime', attempt.at);
      time.textContent = attempt.at;
      var reply = document.createElement('code');
      reply.textContent = attempt.response || 'no reply';
      item.appendChild(time);
      item.appendChild(document.createTextNode(' · attempt ' + attempt.attempt + ' · ' + attempt.outcome + ' · '));
      item.appendChild(reply);
      item.appendChild(document.createTextNode(' · ' + attempt.worker));
      listNode.appendChild(item);
    });
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
